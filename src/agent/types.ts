/**
 * Public types of the native agent engine, gathered from where each is
 * declared: tools (tool-types), options (options-types), results, events and
 * the stored envelope (record-types), and the store contract (stores/types).
 */
import type { ModelMessage } from '../models/types.js';
import type { JsonValue } from './json.js';

export type Message = ModelMessage;
export type { JsonValue };
export type * from './tool-types.js';
export type * from './options-types.js';
export type * from './record-types.js';

// The store contract is declared beside the stores; re-exported here so every import of it keeps working.
export type {
  AgentRunListPage, AgentRunListQuery, AgentRunLoadOptions, AgentRunSaveOptions, AgentRunStore, AgentRunSummary,
  Lease, LeaseProvider, LeaseRenewal,
} from '../stores/types.js';
export type { FinishReason, LanguageModel, ModelSettings, ModelToolCall, ProviderOptions, Usage, ToolChoice } from '../models/types.js';
