/**
 * cairn/context: the context compiler of V3 runs (checkpointVersion: 3). See docs/context.md.
 */
export { createContextCompiler, isContextCompiler } from './compiler.js';
export { createRagContextSource, type RagContextSourceOptions } from './rag.js';
export { createDefaultEstimator, type CalibratedEstimator } from './estimator.js';
export { ContextError, type ContextErrorCode } from './errors.js';
export { contextMarker } from './render.js';
export type {
  CompileInput, ContextBlock, ContextBlockRecord, ContextCompiler, ContextCompilerOptions, ContextCompilerState, ContextEstimator,
  ContextHit, ContextManifest, ContextPackage, ContextSource, ContextSourceInput, ContextWarning, EstimatorSample,
} from './types.js';
