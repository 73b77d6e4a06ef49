/**
 * `agentStateFromParts`: the client's fold of the UI wire. Frames apply in
 * seq order, each exactly once: a frame at or below the state's seq (a
 * duplicate, or a replay that overlaps what the client has) is dropped, and
 * one that comes early (a gap before it) waits in the state until the frames
 * before it arrive. The result is the same whatever the order, the
 * duplicates and the reconnects the frames came through.
 *
 * Browser-safe, and pure: it never changes the state it is given.
 */
import type { AgentRunView } from '../agent/run-view.js';
import type { Usage } from '../models/types.js';
import type {
  AgentFrameData, AgentTerminalState, AgentUiFrame, WireApproval, WireClientCall, WireError,
} from './wire.js';

/** A piece of the conversation as the page shows it, in the order it came. */
export type AgentUiMessagePart =
  | { type: 'text'; step: number; text: string }
  | { type: 'reasoning'; step: number; text: string }
  | {
    type: 'tool';
    step: number;
    toolCallId: string;
    toolName: string;
    /** `running` until it ends; `awaiting-approval` / `awaiting-client` while it waits; then `done` or `error`. */
    state: 'running' | 'awaiting-approval' | 'awaiting-client' | 'done' | 'error';
    /** How a call that did not succeed ended (`failed`, `denied`, `unknown-effect`, ...). */
    outcome?: string;
  };

export interface AgentUiState<T = unknown> {
  /** The seq of the last frame applied (0 before any). */
  seq: number;
  runId: string | null;
  /** `idle` before the first frame; `running` while a leg runs; then the leg's terminal status. */
  status: 'idle' | 'running' | 'suspended' | 'completed' | 'stopped' | 'failed';
  /** Whether the current leg can be read again from a cursor. */
  replayable: boolean;
  phase: 'loop' | 'finalize' | null;
  step: number | null;
  parts: AgentUiMessagePart[];
  /** A draft of the structured output while it is written: unchecked data, never `T`. */
  draft: unknown;
  /** The validated output: set only by a completed terminal state. */
  output: T | undefined;
  /** The terminal state of the last leg that ended. */
  terminal: AgentTerminalState<T> | null;
  pendingApprovals: WireApproval[];
  pendingClientCalls: WireClientCall[];
  /** The last error the run reported (its message redacted by the server). */
  error: WireError | null;
  /** Turns finished so far, and their tokens. */
  steps: number;
  usage: Usage;
  /** The run's own view, and those of the runs its tools started, by run id. */
  view: AgentRunView | null;
  childViews: Record<string, AgentRunView>;
  /**
   * Why the server refused the last request before the run began (a second
   * resume while it runs, an answer missing, an unknown run): such a leg's
   * frames carry no seq and change nothing else.
   */
  refusal: WireError | null;
  /** Frames that came before the ones ahead of them, waiting for the gap to fill. */
  early: AgentUiFrame<T>[];
}

/** The state before any frame. */
export function initialAgentState<T = unknown>(): AgentUiState<T> {
  return {
    seq: 0, runId: null, status: 'idle', replayable: false, phase: null, step: null, parts: [], draft: undefined,
    output: undefined, terminal: null, pendingApprovals: [], pendingClientCalls: [], error: null, steps: 0,
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 }, view: null, childViews: {}, refusal: null, early: [],
  };
}

/**
 * Applies `frames` (parsed SSE `data`) to `state` and returns the new state.
 * Anything that is not a frame of this wire is ignored.
 *
 * @example
 * let state = agentStateFromParts(undefined, []);
 * state = agentStateFromParts(state, [frame]);
 */
export function agentStateFromParts<T = unknown>(state: AgentUiState<T> | undefined, frames: readonly unknown[]): AgentUiState<T> {
  let s: AgentUiState<T> = state ?? initialAgentState<T>();
  for (const raw of frames) {
    if (!isFrame(raw)) continue;
    const frame = raw as AgentUiFrame<T>;
    if (frame.seq === undefined) {
      s = applyRefused(s, frame);
      continue;
    }
    if (!Number.isSafeInteger(frame.seq) || frame.seq < 1) continue;
    // A leg that no journal keeps numbers from 1 again: its first frame says so.
    if (frame.seq === 1 && s.seq >= 1 && frame.type === 'data-agent' && frame.data.phase === 'starting' && frame.data.replayable === false) {
      s = { ...s, seq: 0, early: [] };
    }
    if (frame.seq <= s.seq || s.early.some((f) => f.seq === frame.seq)) continue;
    if (frame.seq > s.seq + 1) {
      s = { ...s, early: [...s.early, frame].sort((a, b) => a.seq! - b.seq!) };
      continue;
    }
    s = apply(s, frame);
    while (s.early.length > 0 && s.early[0]!.seq === s.seq + 1) {
      const [next, ...rest] = s.early;
      s = apply({ ...s, early: rest }, next!);
    }
  }
  return s;
}

function isFrame(value: unknown): value is { type: string; seq?: unknown } {
  if (typeof value !== 'object' || value === null || typeof (value as { type?: unknown }).type !== 'string') return false;
  const seq = (value as { seq?: unknown }).seq;
  return seq === undefined || typeof seq === 'number';
}

/** A frame of a refused leg: it says why, and nothing else changes. */
function applyRefused<T>(s: AgentUiState<T>, frame: AgentUiFrame<T>): AgentUiState<T> {
  if (frame.type === 'error') return { ...s, refusal: frame.error };
  if (frame.type === 'data-agent' && frame.data?.terminal?.status === 'failed') return { ...s, refusal: frame.data.terminal.error };
  return s;
}

function apply<T>(state: AgentUiState<T>, frame: AgentUiFrame<T>): AgentUiState<T> {
  const s: AgentUiState<T> = { ...state, seq: frame.seq! };
  switch (frame.type) {
    case 'data-agent':
      return applyAgent(s, frame.data);
    case 'text-delta':
    case 'reasoning-delta': {
      const kind = frame.type === 'text-delta' ? 'text' : 'reasoning';
      const last = s.parts[s.parts.length - 1];
      if (last && last.type === kind && last.step === frame.step) {
        return { ...s, parts: [...s.parts.slice(0, -1), { ...last, text: last.text + frame.delta }] };
      }
      return { ...s, parts: [...s.parts, { type: kind, step: frame.step, text: frame.delta }] };
    }
    case 'tool-call':
      return { ...s, parts: [...s.parts, { type: 'tool', step: frame.step, toolCallId: frame.toolCallId, toolName: frame.toolName, state: 'running' }] };
    case 'tool-approval-request':
      return setTool(s, frame.toolCallId, { state: 'awaiting-approval' });
    case 'tool-client-call':
      return setTool(s, frame.toolCallId, { state: 'awaiting-client' });
    case 'tool-result':
      return setTool(s, frame.toolCallId, { state: frame.isError ? 'error' : 'done', ...(frame.outcome ? { outcome: frame.outcome } : {}) });
    case 'finish-step':
      return s;
    case 'data-run-view': {
      const view = frame.data;
      if (s.runId === null || view.runId === s.runId) return { ...s, view };
      return { ...s, childViews: { ...s.childViews, [view.runId]: view } };
    }
    case 'error':
      return { ...s, error: frame.error };
    default:
      return s;
  }
}

function setTool<T>(s: AgentUiState<T>, toolCallId: string, change: { state: 'awaiting-approval' | 'awaiting-client' | 'done' | 'error'; outcome?: string }): AgentUiState<T> {
  let found = false;
  // The last part of that id: a resumed call shows again in its later leg.
  const parts = [...s.parts];
  for (let i = parts.length - 1; i >= 0; i--) {
    const part = parts[i]!;
    if (part.type === 'tool' && part.toolCallId === toolCallId) {
      parts[i] = { ...part, ...change };
      found = true;
      break;
    }
  }
  return found ? { ...s, parts } : s;
}

function applyAgent<T>(s: AgentUiState<T>, data: AgentFrameData<T>): AgentUiState<T> {
  switch (data.phase) {
    case 'starting':
      // A new leg: what waited is being answered, and the last leg's outcome no longer stands.
      return {
        ...s, runId: data.runId, status: 'running', replayable: data.replayable === true, terminal: null, output: undefined,
        pendingApprovals: [], pendingClientCalls: [], error: null, refusal: null, draft: undefined,
      };
    case 'loop':
    case 'finalize': {
      const next = { ...s, runId: data.runId, phase: data.phase, step: data.step };
      if ('draft' in data) return { ...next, draft: data.draft };
      // A turn begins: a draft belongs to its finalization attempt only.
      return { ...next, draft: undefined };
    }
    case 'ended': {
      const terminal = data.terminal;
      if (!terminal) return s;
      const next: AgentUiState<T> = { ...s, runId: data.runId, status: terminal.status, terminal, steps: terminal.steps, usage: { ...terminal.usage } };
      if (terminal.status === 'completed') return { ...next, output: terminal.output, draft: undefined };
      if (terminal.status === 'suspended') {
        return { ...next, pendingApprovals: terminal.pendingApprovals, pendingClientCalls: terminal.pendingClientCalls };
      }
      if (terminal.status === 'failed') return { ...next, error: terminal.error };
      return next;
    }
    default:
      return s;
  }
}
