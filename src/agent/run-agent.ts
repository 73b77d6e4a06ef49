/**
 * runAgent, resumeAgent, streamAgent, resumeStreamAgent: the native engine's
 * entry points. They never reject: a refusal is a failed result that wrote
 * nothing.
 */
import {
  AgentRunLeaseError, BindingChangedError, CairnTypeError, ExecutionPolicyError, InvalidOptionsError, RunBusyError, RunIdentityError, serializeError,
} from '../errors/index.js';
import type { CallAnswer, RunContext, RunInput } from '../../machines/index.js';
import { DEFAULT_LEASE_TTL_MS, RunHost } from '../runtime/host.js';
import { holdMemoryScope } from '../memory/run-options.js';
import { prepareMemory } from '../memory/run-start.js';
import { chatOwed, repairChat } from '../chat/projection-repair.js';
import { cancellingOptions, queuedCancel } from '../runtime/cancel-queued.js';
import { initialModels } from '../runtime/model-call.js';
import { bindMcp, closeMcp, connectMcp, connectMcpForResume } from '../mcp/leg.js';
import { closeHandoffs, connectHandoffMcp, enterStoredHandoff, prepareHandoffs, transfersOf } from '../delegation/handoff.js';
import { checkEnvelope } from './envelope.js';
import { toJson } from './json.js';
import {
  bindingChanges, describeBindingChanges, initialMessages, normalizeOptions, validateToolContexts, type NormalizedOptions,
} from './options.js';
import { checkApprovalResponses, matchAnswers, refuseAnswer } from './resume-answers.js';
import { emptyAccounting, resultBase } from './result.js';
import { checkSnapshot } from './snapshot-check.js';
import { createAgentStream, type AgentStream } from './stream.js';
import { runViewSeed } from './run-view.js';
import { asksForV3, openV3, withV3Sink } from '../v3/run-open.js';
import { v3LegOf } from '../v3/run-leg.js';
import { createAgentStreamV3, type AgentStreamV3 } from '../v3/run-stream.js';
import type { AgentOptionsV3, ResumeOptionsV3 } from '../v3/run-options-types.js';
import type {
  AgentEvent, AgentOptions, AgentResult, AgentRunEnvelope, AgentRunStore, AgentToolReceipt, AgentWarning, ApprovalResponse, Lease, Message,
  RecordedVerdict, ResumeOptions, UnknownEffect,
} from './types.js';
import { receiptKey } from './envelope.js';
import { ownReconciliation } from '../delegation/agent-tool-answers.js';
import { provideChildEngine } from '../delegation/agent-tool-engine.js';
import { checkChildBindings } from '../delegation/agent-tool-binding.js';
import {
  answerMovingCalls, approvalOf, checkReconciliation, describeUnknownEffects, interruptedCalls, reconciledReceipt,
} from './interrupted.js';

type Emit<T> = (event: AgentEvent<T>) => void;

// One executor per run within this process, per store object.
const executing = new WeakMap<AgentRunStore, Set<string>>();

export function claim(store: AgentRunStore, runId: string): () => void {
  let runs = executing.get(store);
  if (!runs) executing.set(store, (runs = new Set()));
  if (runs.has(runId)) throw new RunBusyError(runId);
  runs.add(runId);
  return () => runs.delete(runId);
}

/** A failed result for a leg refused before it read or wrote anything. */
export function refusal<T>(runId: string, error: unknown): AgentResult<T> {
  return {
    status: 'failed',
    error: serializeError(error),
    runId,
    messages: [],
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    steps: 0,
    accounting: emptyAccounting(),
    text: '',
    warnings: [],
  };
}

/** The key under which a run's lease is held. */
export function agentRunLeaseKey(session: { runId: string; scope: string }): string {
  return `cairn/agent-run/${encodeURIComponent(session.scope)}/${encodeURIComponent(session.runId)}`;
}

async function guarded<T>(
  options: AgentOptions<T>,
  emit: Emit<T>,
  body: (opts: NormalizedOptions<T>, runId: string, lease: Lease | null) => Promise<AgentResult<T>>,
): Promise<AgentResult<T>> {
  let runId = options?.session?.runId ?? '';
  let result: AgentResult<T>;
  let closeV3 = () => undefined as void;
  try {
    // A V3 leg (checkpointVersion: 3) is refused here or gets its store adapter and leg; any other leg is untouched.
    const v3 = openV3(options);
    closeV3 = v3.close;
    const opts = normalizeOptions(v3.options);
    v3LegOf(opts.raw)?.bind(opts as NormalizedOptions<unknown>);
    runId = opts.runId || opts.generateId();
    const release = opts.raw.session ? claim(opts.raw.session.store, runId) : () => undefined;
    let lease: Lease | null = null;
    const leaseOptions = opts.raw.lease;
    try {
      if (leaseOptions) {
        // The lease is claimed before the run is read, and held until the leg has written its last.
        const session = opts.raw.session!;
        const key = agentRunLeaseKey(session);
        lease = await leaseOptions.provider.acquire(key, leaseOptions.owner ?? opts.generateId(), leaseOptions.ttlMs ?? DEFAULT_LEASE_TTL_MS);
        if (!lease) throw new AgentRunLeaseError('lease_held', key);
      }
      opts.toolContexts = await validateToolContexts(options as AgentOptions<unknown>);
      try {
        await prepareHandoffs(opts, runId);
        result = await body(opts, runId, lease);
      } finally {
        await closeMcp(opts);
        await closeHandoffs(opts);
      }
    } finally {
      if (lease) await leaseOptions!.provider.release(lease).catch(() => undefined);
      release();
    }
  } catch (error) {
    result = refusal<T>(runId, error);
    emit({ type: 'error', error: serializeError(error) });
  } finally {
    closeV3();
  }
  emit({ type: 'result', result });
  return result;
}

async function start<T>(options: AgentOptions<T>, emit: Emit<T>): Promise<AgentResult<T>> {
  return guarded(options, emit, async (opts, runId, lease) => {
    // The servers are connected and their tools listed before the run starts: a bad server fails it with nothing written.
    await connectMcp(opts);
    await connectHandoffMcp(opts);
    const input: RunInput = {
      runId,
      messages: toJson(initialMessages(options as AgentOptions<unknown>)),
      maxSteps: opts.maxSteps,
      maxOutputAttempts: opts.maxOutputAttempts,
      maxVerifyAttempts: opts.maxVerifyAttempts,
      toolNames: Object.keys(opts.tools),
      outputMode: opts.outputMode,
      verify: typeof options.verify === 'function',
      deadlineAt: opts.deadlineAt,
      // A run with fallbacks keeps its fail-over record from the start (which model it calls now).
      models: opts.models.length > 1 ? toJson(initialModels(opts.model)) : null,
      handoffs: transfersOf(opts),
    };
    const host = new RunHost<T>(opts, runId, emit);
    host.lease = lease;
    bindMcp(opts, host);
    // An earlier start of this run id may have died before its first save: its reservation is in a
    // shared ledger but in no record, so no resume would hold it. This start does, as a resume would.
    if (host.budget && opts.raw.session) await host.budget.holdLeftovers();
    const releaseScope = holdMemoryScope(opts.execution, opts.memory);
    try {
      if (opts.chat) input.chat = { chatId: opts.chat.chatId, inputCount: input.messages.length, status: 'pending', cursor: 0 };
      if (opts.memory) await prepareMemory({ runId, signal: host.signal, emit: (w) => host.emit(w), generateId: opts.generateId }, opts.memory, input);
      return await host.start(input);
    } finally {
      releaseScope();
    }
  });
}

async function resume<T>(options: ResumeOptions<T>, emit: Emit<T>): Promise<AgentResult<T>> {
  if (!options?.session) {
    const result = refusal<T>('', new InvalidOptionsError('A resume needs session { store, runId, scope }.'));
    emit({ type: 'result', result });
    return result;
  }
  return guarded(options, emit, async (opts, runId, lease) => {
    const session = opts.raw.session!;
    // Malformed or contradicting verdicts are refused before anything is read or written.
    const approvalResponses = checkApprovalResponses(options.approvalResponses);
    const loaded = await session.store.load(runId, { scope: session.scope });
    if (loaded === undefined) throw new RunIdentityError('run_not_found', runId);
    const stored = checkEnvelope(loaded, runId, session.scope);
    // A run that ended answers with its stored result (below): its MCP servers are not contacted for that.
    const ended = ['completed', 'failed', 'stopped'].includes(stored.status) && stored.result !== undefined
      && !(stored.status === 'failed' && options.retryFailed === true);
    const mcp = await connectMcpForResume(opts, stored, ended);
    for (const warning of mcp.warnings) emit(warning);
    await connectHandoffMcp(opts, stored, ended);
    const changed = bindingChanges(stored.binding, opts.binding).filter((key) => !(mcp.accepted && key === 'mcp'));
    if (changed.length > 0) throw new BindingChangedError(changed, describeBindingChanges(stored.binding, opts.binding));
    if (!ended) await checkChildBindings(stored, opts as NormalizedOptions<unknown>);
    const retrying = stored.status === 'failed' && options.retryFailed === true;
    if (retrying && !stored.retry) {
      throw new CairnTypeError(
        'invalid_options',
        `retryFailed: run ${runId} did not fail for a transient cause (${stored.result?.status === 'failed' ? stored.result.error.code : 'unknown'}); it stays failed.`,
      );
    }
    // A run that ended answers with what it stored, without a model call.
    if (!retrying && (stored.status === 'completed' || stored.status === 'failed' || stored.status === 'stopped')) {
      // A terminal resume finishes a chat write the run's last attempt failed to make, then answers as stored.
      if (stored.result && opts.chat && chatOwed(stored)) await repairChatOnResume(stored, opts, lease, emit);
      if (stored.result) return stored.result as AgentResult<T>;
    }
    checkSnapshot(runId, stored.snapshot);
    // A cancel queued for the run ends it now, whatever it waits for (src/runtime/cancel-queued.ts).
    const cancel = queuedCancel(stored);
    const context = (stored.snapshot as unknown as { context: RunContext }).context;
    const messages = context.messages as unknown as Message[];
    const interrupted = interruptedCalls(stored);
    // A sub-agent's unknown effects are its child's to reconcile (src/delegation/agent-tool-answers.ts).
    const reconciliation = checkReconciliation(interrupted, ...ownReconciliation(stored, interrupted, options.retryToolCallIds, options.reconciledToolResults));
    const ignoredRetries: AgentWarning[] = reconciliation.ignored.map((toolCallId) => ({
      type: 'warning', setting: 'retryToolCallIds', toolCallId,
      message: `retryToolCallIds: ${toolCallId} is not an interrupted call of this run; it was ignored.`,
    }));
    for (const warning of ignoredRetries) emit(warning);
    if (reconciliation.unsettled.length > 0 && !cancel) {
      // Nobody knows whether these effects landed: stop, write nothing, list every one the store holds.
      return storedResult<T>(stored, context, ignoredRetries, {
        status: 'stopped', reason: 'tool-reconciliation-required', unknownEffects: describeUnknownEffects(interrupted, stored.approvals),
      });
    }
    const retryVerdicts = verdictsForRetries(stored, reconciliation.retry, approvalResponses);
    const matched = matchAnswers(
      stored, messages, approvalResponses, options.clientToolResults, retryVerdicts.taken, opts.allowBareApprovalIds,
    );
    const before = [...ignoredRetries, ...retryVerdicts.warnings];
    matched.warnings.unshift(...before);
    for (const warning of matched.warnings.slice(ignoredRetries.length)) emit(warning);
    if (stored.status === 'suspended' && !matched.complete && !cancel) {
      // An absent verdict is not a denial: the run stays as it was, nothing is written.
      return storedResult<T>(stored, context, matched.warnings, {
        status: 'suspended', pendingApprovals: stored.pendingApprovals, pendingClientCalls: stored.pendingClientCalls,
      });
    }
    if (stored.ledger || opts.execution) await restoreLedger(stored, opts as NormalizedOptions<unknown>);
    // A run handed to another agent goes on with that agent's model, instructions and tools.
    enterStoredHandoff(opts, context.activeAgent);
    const releaseScope = holdMemoryScope(opts.execution, opts.memory);
    const host = new RunHost<T>(cancel ? cancellingOptions(opts) : opts, runId, emit, stored);
    host.lease = lease;
    bindMcp(opts, host);
    host.warnings.push(...mcp.warnings);
    if (host.budget) await host.budget.holdLeftovers();
    for (const warning of matched.warnings) host.warnings.push(warning);
    // Everything the resume brings goes to the calls as their answers: each verdict is kept with its
    // approval request, a reconciled result becomes the call's receipt, a retry is the call's to take.
    const reconciled = new Map(reconciliation.reconciled.map(({ receipt, result }) => [receipt.key, reconciledReceipt(receipt, result)]));
    const restored = answerMovingCalls(stored, reconciled);
    // The tools the resumed run offers: a catalog taken with onCatalogChange: 'accept' may have others.
    if (opts.mcpLive) (restored.snapshot as unknown as { context: RunContext }).context.toolNames = Object.keys(opts.tools);
    return host.resume(restored, (open) => {
      const answers: Record<string, CallAnswer> = {};
      for (const [childId, call] of open) {
        if (!call.hasTag('suspended') && !call.hasTag('needs-reconciliation')) continue;
        const key = receiptKey(call.context.modelStep, call.context.toolCallId);
        const receipt = reconciled.get(key) as CallAnswer['receipt'] | undefined;
        if (retryVerdicts.byKey.has(key)) {
          const verdict = retryVerdicts.byKey.get(key);
          answers[childId] = verdict ? { retry: true, verdict } : { retry: true };
        } else answers[childId] = { ...(matched.byKey.get(key) ?? {}), ...(receipt ? { receipt } : {}) };
      }
      return answers;
    }, retrying ? stored.retry!.phase : undefined, cancel).finally(releaseScope);
  });
}

async function repairChatOnResume<T>(stored: AgentRunEnvelope, opts: NormalizedOptions<T>, lease: Lease | null, emit: Emit<T>): Promise<void> {
  const store = opts.raw.session!.store;
  const { warning } = await repairChat(stored, opts.chat!, async (envelope) => {
    await store.save({ ...envelope, revision: envelope.revision + 1, updatedAt: opts.now() }, lease ? { lease } : undefined);
  }, opts.now());
  if (warning) emit(warning);
}

/**
 * The execution ledger a resume goes on with. A run that checkpointed a ledger
 * resumes only under a context of the same scope. A root context's checkpoint
 * is restored into the context's ledger (entries it holds already stay as they
 * are), so a budget is never reset by a restart; a child's slice must still be
 * in the context's ledger, since a slice cannot seed a new ledger.
 */
async function restoreLedger(stored: AgentRunEnvelope, opts: NormalizedOptions<unknown>): Promise<void> {
  const saved = stored.ledger;
  if (!saved) return;
  const execution = opts.execution;
  const mismatch = (why: string) => new ExecutionPolicyError('execution_context_mismatch', `Run ${stored.runId} ran under execution context ${saved.scope}; ${why}.`);
  if (!execution) throw mismatch('resume it with that context (execution)');
  if (execution.path !== saved.scope) throw mismatch(`this resume has ${execution.path}`);
  if (!saved.subtree) {
    await execution.ledger.restore(saved.entries);
    return;
  }
  const held = new Set((await execution.ledger.entries(saved.scope)).map((e) => e.id));
  const missing = saved.entries.filter((e) => !held.has(e.id));
  if (missing.length > 0) throw mismatch(`its ledger does not hold ${missing.length} of the run's reservations (a slice cannot seed a new ledger)`);
}

/**
 * The verdict each retried call passes its gate with. A call that was held for
 * approval takes the verdict the run recorded for it; a verdict sent again for
 * it must be the same one (another is refused: it was answered once). Only a
 * record that kept no verdict (written before verdicts were kept) takes the one
 * sent, and without one the call is answered as denied, with a warning. A call
 * that was never held for approval gets no verdict: its gate decides as for a
 * new call.
 */
function verdictsForRetries(
  stored: AgentRunEnvelope,
  retry: AgentToolReceipt[],
  responses: readonly ApprovalResponse[],
): { byKey: Map<string, RecordedVerdict | null>; taken: Set<string>; warnings: AgentWarning[] } {
  const byKey = new Map<string, RecordedVerdict | null>();
  const taken = new Set<string>();
  const warnings: AgentWarning[] = [];
  for (const receipt of retry) {
    // The request issued for this very call: same turn, same id. A verdict from another turn never counts.
    const issued = approvalOf(stored.approvals, receipt);
    if (!issued) {
      byKey.set(receipt.key, null);
      continue;
    }
    const sent = responses.find((r) => r.approvalId === issued.approvalId && r.token === issued.record.token);
    const recorded = issued.record.verdict;
    if (sent) {
      taken.add(sent.approvalId);
      if (recorded && (sent.approved !== recorded.approved)) {
        refuseAnswer(
          `approvalResponses: the verdict for ${issued.approvalId} (${sent.approved ? 'approve' : 'deny'}) differs from the one the run ` +
          `recorded for it (${recorded.approved ? 'approve' : 'deny'}); a verdict answers its call once. To keep ${receipt.toolCallId} from ` +
          'running again, reconcile it instead of retrying it. Nothing was written.',
        );
      }
    }
    const verdict: RecordedVerdict | undefined = recorded
      ?? (sent ? { approved: sent.approved, ...(sent.reason !== undefined ? { reason: sent.reason } : {}) } : undefined);
    if (verdict) {
      byKey.set(receipt.key, verdict);
      continue;
    }
    byKey.set(receipt.key, { approved: false, reason: 'No approval response.' });
    warnings.push({
      type: 'warning', setting: 'retryToolCallIds', toolCallId: receipt.toolCallId,
      message: `retryToolCallIds: ${receipt.toolCallId} was held for approval, and the run recorded no verdict for it and none was ` +
        'sent; it is answered as denied (Tool call denied. Reason: No approval response.).',
    });
  }
  return { byKey, taken, warnings };
}

type StoredShape<T> =
  | { status: 'suspended'; pendingApprovals: AgentRunEnvelope['pendingApprovals']; pendingClientCalls: AgentRunEnvelope['pendingClientCalls'] }
  | { status: 'stopped'; reason: 'tool-reconciliation-required'; unknownEffects: UnknownEffect[] }
  | Extract<AgentResult<T>, { status: 'failed' }>;

/** A result answered from the stored record, without restoring or writing anything. */
function storedResult<T>(stored: AgentRunEnvelope, context: RunContext, warnings: AgentResult<T>['warnings'], shape: StoredShape<T>): AgentResult<T> {
  return { ...resultBase(stored.runId, context, warnings), ...shape } as AgentResult<T>;
}

/** Runs an agent to rest: completed, suspended, stopped or failed. Never rejects. */
export function runAgent<T = string>(options: AgentOptions<T> | AgentOptionsV3<T>): Promise<AgentResult<T>> {
  return start(options as AgentOptions<T>, () => undefined);
}

/** Goes on with a stored run: answers pending approvals and client calls, or returns a terminal run's stored result. */
export function resumeAgent<T = string>(options: ResumeOptions<T> | ResumeOptionsV3<T>): Promise<AgentResult<T>> {
  return resume(options as ResumeOptions<T>, () => undefined);
}

const outputModeOf = (options: AgentOptions<unknown>) => (options?.output ? options.output.mode ?? 'json' : 'none');

/** Like runAgent, as a stream. Returns at once; the run starts on first access. */
export function streamAgent<T = string>(options: AgentOptionsV3<T>): AgentStreamV3<T>;
export function streamAgent<T = string>(options: AgentOptions<T>): AgentStream<T>;
export function streamAgent<T = string>(options: AgentOptions<T> | AgentOptionsV3<T>): AgentStream<T> {
  if (asksForV3(options)) {
    // A V3 stream: eventsV3 carries the V3 events beside every other one (a refused V3 leg gets one too).
    return createAgentStreamV3<T>((emit, emitV3) => start(withV3Sink(options as AgentOptions<T>, emitV3), emit), {
      outputMode: outputModeOf(options as AgentOptions<unknown>), runView: runViewSeed(options as AgentOptions<unknown>),
    });
  }
  return createAgentStream<T>((emit) => start(options as AgentOptions<T>, emit), {
    outputMode: outputModeOf(options as AgentOptions<unknown>), runView: runViewSeed(options as AgentOptions<unknown>),
  });
}

/** Like resumeAgent, as a stream. */
export function resumeStreamAgent<T = string>(options: ResumeOptionsV3<T>): AgentStreamV3<T>;
export function resumeStreamAgent<T = string>(options: ResumeOptions<T>): AgentStream<T>;
export function resumeStreamAgent<T = string>(options: ResumeOptions<T> | ResumeOptionsV3<T>): AgentStream<T> {
  if (asksForV3(options)) {
    return createAgentStreamV3<T>((emit, emitV3) => resume(withV3Sink(options as ResumeOptions<T>, emitV3), emit), {
      outputMode: outputModeOf(options as AgentOptions<unknown>), runView: runViewSeed(options as AgentOptions<unknown>),
    });
  }
  return createAgentStream<T>((emit) => resume(options as ResumeOptions<T>, emit), {
    outputMode: outputModeOf(options as AgentOptions<unknown>), runView: runViewSeed(options as AgentOptions<unknown>),
  });
}

// A sub-agent call drives its child run through the engine's own entry points (src/delegation/agent-tool-engine.ts).
provideChildEngine({ start: (o) => streamAgent(o), resume: (o) => resumeStreamAgent(o) });
