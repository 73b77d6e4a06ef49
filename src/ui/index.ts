/**
 * `cairn/ui`: runs on the UI wire. On the server, `toAgentStreamResponse`
 * turns a run's stream into an SSE `Response` (journaled for replay when given
 * a store) and `resumeAgentStreamResponse` serves a client from its cursor;
 * in the page, `agentStateFromParts` folds the frames. Browser-safe: nothing
 * here imports Node. See docs/ui.md.
 */
export {
  toAgentStreamResponse,
  resumeAgentStreamResponse,
  AgentStreamReplayError,
  type AgentStreamResponseOptions,
  type ResumeAgentStreamResponseOptions,
} from './response.js';
export {
  createInMemoryAgentStreamJournal,
  JournalConflictError,
  type AgentStreamJournal,
  type InMemoryJournalOptions,
  type JournalFrame,
  type JournalHead,
} from './journal.js';
export {
  agentStateFromParts,
  initialAgentState,
  type AgentUiMessagePart,
  type AgentUiState,
} from './reducer.js';
export type {
  AgentFrameData,
  AgentTerminalState,
  AgentUiFrame,
  AgentUiPart,
  WireApproval,
  WireClientCall,
  WireError,
} from './wire.js';
