/**
 * The UI wire: what a run looks like to a browser. Each run event becomes
 * zero or more frames, each a small JSON object with its `seq`; the frames
 * say what a page shows (text, which tools run, what waits for a person, the
 * outcome) and leave out what stays on the server: the transcript, tool
 * arguments and results, receipts, the ledger, and error messages that could
 * carry what a tool or a provider put in them.
 *
 * Browser-safe: no Node imports (this file, the reducer and the journal make
 * up what a page needs).
 */
import { redactSecrets, type CairnErrorCode, type SerializedError } from '../errors/index.js';
import type { AgentRunView } from '../agent/run-view.js';
import type { AgentEvent, AgentResult, PendingApproval, PendingClientCall, StopReason } from '../agent/types.js';
import type { FinishReason, Usage } from '../models/types.js';
import type { JsonValue } from '../agent/json.js';
import { scanPartialJson } from '../agent/partial-json.js';

/** A failure as the wire shows it: its class name, its code, and a message that cannot carry a secret. */
export interface WireError {
  name: string;
  code: CairnErrorCode;
  message: string;
}

/**
 * An approval a person must give: what they approve (`args`) and what the
 * client sends back (`approvalId`, `token`). The fields are picked one by one,
 * so a field the engine adds to its own record does not reach the wire unseen.
 */
export type WireApproval = Pick<PendingApproval, 'approvalId' | 'token' | 'toolCallId' | 'toolName' | 'args' | 'modelStep'>;

/** A client tool call the page must answer. */
export type WireClientCall = Pick<PendingClientCall, 'toolCallId' | 'toolName' | 'args' | 'modelStep'>;

interface TerminalBase {
  /** Model turns of the whole run. */
  steps: number;
  usage: Usage;
}

/** How a leg ended: the one place the validated output is. */
export type AgentTerminalState<T = unknown> =
  | (TerminalBase & { status: 'completed'; output: T; text: string })
  | (TerminalBase & { status: 'suspended'; pendingApprovals: WireApproval[]; pendingClientCalls: WireClientCall[] })
  | (TerminalBase & {
    status: 'stopped';
    reason: StopReason;
    stopDetails?: JsonValue;
    /** The interrupted calls, by id and tool name only (their receipts stay on the server). */
    unknownEffects?: { toolCallId: string; toolName: string }[];
  })
  | (TerminalBase & { status: 'failed'; error: WireError; retry?: { cause: string; phase: 'loop' | 'finalize' } });

/**
 * What a `data-agent` frame says. `phase` is `starting` on a leg's first
 * frame, `loop` or `finalize` when a model turn of that phase begins (and on
 * the drafts of the output), `ended` on the leg's last frame, which carries
 * `terminal`.
 */
export interface AgentFrameData<T = unknown> {
  runId: string;
  seq: number | null;
  phase: 'starting' | 'loop' | 'finalize' | 'ended';
  step: number | null;
  /** On a leg's first frame: whether it went on with a stored run. */
  resumed?: boolean;
  /** On a leg's first frame: whether a client can read this leg again from a cursor (a journal keeps it). */
  replayable?: boolean;
  /** A draft of the structured output while the finalization turn writes it: unchecked, never `T`. */
  draft?: unknown;
  terminal?: AgentTerminalState<T>;
}

/** One frame of the wire. `seq` is absent on the frames of a leg the run refused before it began. */
export type AgentUiFrame<T = unknown> = { seq?: number } & AgentUiPart<T>;

/** The parts a frame can carry. */
export type AgentUiPart<T = unknown> =
  | { type: 'data-agent'; data: AgentFrameData<T> }
  | { type: 'text-delta'; step: number; delta: string }
  | { type: 'reasoning-delta'; step: number; delta: string }
  | { type: 'tool-call'; step: number; toolCallId: string; toolName: string }
  | { type: 'tool-approval-request'; toolCallId: string; toolName: string; approvalId: string }
  | { type: 'tool-client-call'; toolCallId: string; toolName: string }
  | { type: 'tool-result'; step: number; toolCallId: string; toolName: string; isError: boolean; outcome?: string }
  | { type: 'finish-step'; step: number; finishReason: FinishReason; usage: Usage }
  | { type: 'data-run-view'; data: AgentRunView }
  | { type: 'error'; error: WireError };

/**
 * Codes whose messages come from your code or a provider (a tool's thrown
 * error, a guardrail, an HTTP body): the wire sends a fixed sentence for
 * them instead, since no pattern can tell what in them is private.
 */
const FOREIGN_MESSAGE_CODES: ReadonlySet<string> = new Set<CairnErrorCode>([
  'tool_failed', 'callback_failed', 'model_call_failed', 'api_call_failed', 'invalid_response', 'reconciled_error', 'internal',
]);

/** A serialized error as the wire may show it. */
export function wireError(error: SerializedError): WireError {
  const message = FOREIGN_MESSAGE_CODES.has(error.code)
    ? `The run failed (${error.code}); the details are in the server's logs.`
    : redactSecrets(error.message);
  return { name: error.name, code: error.code, message };
}

/** The terminal state of a result: only what a page may see of it. */
export function terminalState<T>(result: AgentResult<T>): AgentTerminalState<T> {
  const base: TerminalBase = { steps: result.steps, usage: { ...result.usage } };
  switch (result.status) {
    case 'completed':
      return { ...base, status: 'completed', output: result.output, text: result.text };
    case 'suspended':
      return {
        ...base,
        status: 'suspended',
        pendingApprovals: result.pendingApprovals.map(({ approvalId, token, toolCallId, toolName, args, modelStep }) => ({
          approvalId, token, toolCallId, toolName, args, modelStep,
        })),
        pendingClientCalls: result.pendingClientCalls.map(({ toolCallId, toolName, args, modelStep }) => ({ toolCallId, toolName, args, modelStep })),
      };
    case 'stopped':
      return {
        ...base,
        status: 'stopped',
        reason: result.reason,
        ...(result.stopDetails !== undefined ? { stopDetails: result.stopDetails } : {}),
        ...(result.unknownEffects ? { unknownEffects: result.unknownEffects.map((e) => ({ toolCallId: e.toolCallId, toolName: e.toolName })) } : {}),
      };
    case 'failed':
      return { ...base, status: 'failed', error: wireError(result.error), ...(result.retry ? { retry: { ...result.retry } } : {}) };
  }
}

/**
 * Turns a leg's events into parts, in order, keeping what it needs between
 * events: the finalization turn under way and the draft of the output it has
 * shown.
 */
export class WireTranslator<T = unknown> {
  readonly #runId: string;
  #phase: 'loop' | 'finalize' | null = null;
  #step: number | null = null;
  #finalizeText = '';
  #lastDraft: string | undefined;
  /** The id the engine gave the run (its own, when it has no session), which the views name. */
  #engineRunId: string | null = null;

  constructor(runId: string) {
    this.#runId = runId;
  }

  /** The leg's first part. `engineRunId` is the run-start event's: views that name it are the run's own. */
  start(resumed: boolean, replayable: boolean, engineRunId?: string): AgentUiPart<T> {
    this.#engineRunId = engineRunId ?? null;
    return { type: 'data-agent', data: { runId: this.#runId, seq: null, phase: 'starting', step: null, resumed, replayable } };
  }

  /** The part that ends the leg: its terminal state. */
  end(terminal: AgentTerminalState<T>): AgentUiPart<T> {
    return { type: 'data-agent', data: { runId: this.#runId, seq: null, phase: 'ended', step: this.#step, terminal } };
  }

  /** The parts of one event (the result's terminal part comes from {@link end}). */
  parts(event: AgentEvent<T>): AgentUiPart<T>[] {
    switch (event.type) {
      case 'step-start':
        this.#phase = event.phase;
        this.#step = event.step;
        this.#finalizeText = '';
        this.#lastDraft = undefined;
        return [{ type: 'data-agent', data: { runId: this.#runId, seq: null, phase: event.phase, step: event.step } }];
      case 'text-delta': {
        const parts: AgentUiPart<T>[] = [{ type: 'text-delta', step: event.step, delta: event.delta }];
        if (this.#phase === 'finalize' && event.step === this.#step) {
          this.#finalizeText += event.delta;
          const scan = scanPartialJson(this.#finalizeText);
          if (scan !== undefined) this.#draft(scan.value, parts);
        }
        return parts;
      }
      case 'reasoning-delta':
        return [{ type: 'reasoning-delta', step: event.step, delta: event.delta }];
      case 'tool-call-start': {
        const parts: AgentUiPart<T>[] = [{ type: 'tool-call', step: event.step, toolCallId: event.toolCallId, toolName: event.toolName }];
        // In tool mode the finalization turn's one call is the forced output tool: its arguments are the draft.
        if (this.#phase === 'finalize' && event.step === this.#step) this.#draft(event.args, parts);
        return parts;
      }
      case 'tool-call-end':
        return [{
          type: 'tool-result', step: event.step, toolCallId: event.toolCallId, toolName: event.toolName, isError: event.isError,
          ...(event.outcome ? { outcome: event.outcome } : {}),
        }];
      case 'approval-request':
        return [{ type: 'tool-approval-request', toolCallId: event.approval.toolCallId, toolName: event.approval.toolName, approvalId: event.approval.approvalId }];
      case 'client-call-request':
        return [{ type: 'tool-client-call', toolCallId: event.call.toolCallId, toolName: event.call.toolName }];
      case 'step-finish':
        return [{ type: 'finish-step', step: event.step, finishReason: event.finishReason, usage: { ...event.usage } }];
      case 'agent-run-update':
        return [{ type: 'data-run-view', data: this.#view(event.view) }];
      case 'error':
        return [{ type: 'error', error: wireError(event.error) }];
      // The raw result, the run's start (the leg's first part says it), attempts, verdicts and warnings stay on the server.
      default:
        return [];
    }
  }

  /** A view with the run named as the wire names it (a child's parent too). */
  #view(view: AgentRunView): AgentRunView {
    const own = this.#engineRunId;
    if (own === null || own === this.#runId) return view;
    if (view.runId === own) return { ...view, runId: this.#runId };
    if (view.parentRunId === own) return { ...view, parentRunId: this.#runId };
    return view;
  }

  #draft(value: unknown, parts: AgentUiPart<T>[]): void {
    const key = JSON.stringify(value);
    if (key === this.#lastDraft) return;
    this.#lastDraft = key;
    parts.push({ type: 'data-agent', data: { runId: this.#runId, seq: null, phase: 'finalize', step: this.#step, draft: value } });
  }
}

/** Gives a part its seq (also inside a data-agent frame's data). */
export function numbered<T>(part: AgentUiPart<T>, seq: number | undefined): AgentUiFrame<T> {
  if (part.type === 'data-agent') return { seq, type: 'data-agent', data: { ...part.data, seq: seq ?? null } } as AgentUiFrame<T>;
  return seq === undefined ? part : ({ seq, ...part } as AgentUiFrame<T>);
}

const encoder = new TextEncoder();

/** One SSE event: `id:` (when the frame has a seq and the leg is replayable) and the frame's JSON on one `data:` line. */
export function sseEvent(body: string, id: number | undefined): Uint8Array {
  return encoder.encode(`${id !== undefined ? `id: ${id}\n` : ''}data: ${body}\n\n`);
}
