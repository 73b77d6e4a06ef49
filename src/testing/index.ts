export * from './mock-model.js';
export * from './faults.js';
export * from './conformance/index.js';
