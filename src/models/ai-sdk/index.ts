/** Vercel AI SDK language models (spec v2, v3, v4) as Cairn models. */
export { fromAISDK, isAISDKModel, type FromAISDKOptions } from './model.js';
export { AI_SDK_SPEC_VERSIONS, type AISDKLanguageModel, type AISDKSpecVersion } from './spec.js';
