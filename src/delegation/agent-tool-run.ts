/**
 * Drives a sub-agent call's child run (the `runChild` actor of
 * machines/sub-agent.ts): starts it under its derived id, or goes on with it
 * when the store holds it already, and says how it came to rest. The child is
 * a normal durable run in the parent's store and scope; what it inherits is
 * decided here: a child of the parent's execution context (allowlists,
 * deadline, budget, cancellation), the parent's onToolCall / onToolResult
 * guardrails (the parent's around the child's own), the parent's clock and id
 * source, the verdicts and reconciliations the parent's resume brought for
 * it. It gets no memory and no chat. (Internal to Cairn.)
 */
import { serializeError, type SerializedError } from '../errors/index.js';
import type { RunChildInput, RunChildOutput, ChildRunFacts, Json } from '../../machines/index.js';
import type { AgentOptions, ResumeOptions } from '../agent/options-types.js';
import type { AgentResult, AgentRunStore, JsonValue } from '../agent/types.js';
import type { ToolCallGuardDecision, ToolCallGuardInput, ToolResultGuardInput } from '../agent/tool-types.js';
import { createInMemoryAgentRunStore } from '../stores/in-memory.js';
import { effectSignal, type Leg } from '../runtime/host-state.js';
import { SubAgentError } from './agent-tool-errors.js';
import { PARENT, parentOf, subAgentOf, type SubAgentDefinition, type SubAgentParent } from './agent-tool-marker.js';
import { childEngine } from './agent-tool-engine.js';
import { childRunIdOf } from './agent-tool-id.js';
import { receiptKey } from '../../machines/index.js';

/** A child that failed for one of these did not fail at its work: its store refused a write, or another executor has it. */
const STORE_FAILURES: ReadonlySet<string> = new Set(['persistence_failed', 'store_unreachable', 'revision_conflict', 'run_busy', 'lease_held', 'lease_lost']);

/** A parent without a store hands its children a private one, for the leg's life. */
const privateStores = new WeakMap<Leg, AgentRunStore>();

type ToolCallGuard = NonNullable<AgentOptions['onToolCall']>;
type ToolResultGuard = NonNullable<AgentOptions['onToolResult']>;

/** The parent's guardrail first; the child's own sees what the parent's let through (a block ends it). */
function outerCallGuard(parent: ToolCallGuard | undefined, own: ToolCallGuard | undefined): ToolCallGuard | undefined {
  if (!parent || !own) return parent ?? own;
  return async (input: ToolCallGuardInput): Promise<ToolCallGuardDecision> => {
    const first = await parent(input);
    if (first && first.action === 'block') return first;
    const args = first && first.action === 'rewrite' ? first.args : input.args;
    const second = await own({ ...input, args });
    if (second && second.action !== 'allow') return second;
    return first && first.action === 'rewrite' ? first : second;
  };
}

/** The child's own onToolResult first, then the parent's on what it left. */
function outerResultGuard(parent: ToolResultGuard | undefined, own: ToolResultGuard | undefined): ToolResultGuard | undefined {
  if (!parent || !own) return parent ?? own;
  return async (input: ToolResultGuardInput) => {
    const replaced = await own(input);
    const output = replaced === undefined ? input.output : replaced;
    const last = await parent({ ...input, output });
    return last === undefined ? (replaced === undefined ? undefined : output) : last;
  };
}

const withRunId = (items: readonly unknown[] | undefined, runId: string): Json[] =>
  (items ?? []).map((item) => ({ runId, ...(item as Record<string, Json>) }) as Json);

const failure = (error: SubAgentError | SerializedError): { kind: 'threw'; error: SerializedError } =>
  ({ kind: 'threw', error: error instanceof Error ? serializeError(error) : error });

/** How the child came to rest, as the parent's call takes it. */
function outcomeOf(def: SubAgentDefinition, facts: ChildRunFacts, result: AgentResult<unknown>, structured: boolean): RunChildOutput {
  switch (result.status) {
    case 'completed':
      return { kind: 'result', value: (structured ? result.output : result.text) as Json, child: facts };
    case 'suspended':
      return { kind: 'suspended', child: { ...facts, waits: 'approval', pendingApprovals: withRunId(result.pendingApprovals, result.runId) } };
    case 'stopped':
      if (result.reason === 'tool-reconciliation-required') {
        return { kind: 'reconcile', child: { ...facts, waits: 'reconciliation', unknownEffects: withRunId(result.unknownEffects, result.runId) } };
      }
      return { ...failure(new SubAgentError('subagent_stopped', `Sub-agent "${def.name}" stopped without an answer (${result.reason}).`, def.name)), child: facts };
    case 'failed':
      // The child's store failed it (or another executor holds it): nothing is wrong with its work, and its record is
      // as its last save left it. The call waits as for a reconciliation; a resume drives the child again from there.
      // So does a child that failed for a transient cause (a retryable model error): the next resume retries it.
      if (STORE_FAILURES.has(result.error.code) || result.retry) return { kind: 'reconcile', child: { ...facts, waits: 'reconciliation', unknownEffects: [] } };
      return { kind: 'threw', error: { ...result.error, message: `Sub-agent "${def.name}" failed: ${result.error.message}` }, child: facts };
    default:
      return { ...failure(new SubAgentError('subagent_stopped', `Sub-agent "${def.name}" ended as ${(result as { status: string }).status}.`, def.name)), child: facts };
  }
}

/** What the parent's resume brought for this child: the verdicts and reconciliations of the calls the child waits on. */
function answersFor(raw: ResumeOptions<unknown>, pendingIds: ReadonlySet<string>, unknownIds: ReadonlySet<string>): Partial<ResumeOptions<unknown>> {
  const approvals = (raw.approvalResponses ?? []).filter((r) => pendingIds.has(r?.approvalId));
  const retries = (raw.retryToolCallIds ?? []).filter((id) => unknownIds.has(id));
  const reconciled = (raw.reconciledToolResults ?? []).filter((r) => unknownIds.has(r?.toolCallId));
  return {
    ...(approvals.length > 0 ? { approvalResponses: approvals } : {}),
    ...(retries.length > 0 ? { retryToolCallIds: retries } : {}),
    ...(reconciled.length > 0 ? { reconciledToolResults: reconciled } : {}),
  };
}

/** Drives the child run of one sub-agent call to its next rest. Never throws for the child's own outcomes. */
export async function runChild(leg: Leg, input: RunChildInput, signal: AbortSignal): Promise<RunChildOutput> {
  const def = subAgentOf(leg.opts.tools[input.toolName]);
  if (!def) throw new SubAgentError('agent_tool_invalid', `Tool "${input.toolName}" is not a sub-agent of this run.`, input.toolName);
  const runId = childRunIdOf(leg.runId, input.modelStep, input.toolCallId);
  const facts: ChildRunFacts = { runId };
  // The receipt write's permit is not needed: driving the child again is safe (its own receipts guard its effects).
  leg.permits.take(receiptKey(input.modelStep, input.toolCallId));
  const depth = (parentOf(leg.opts.raw)?.depth ?? 0) + 1;
  if (depth > def.maxDepth) {
    return { ...failure(new SubAgentError('subagent_depth_exceeded', `Sub-agent "${def.name}" would run at depth ${depth}, deeper than its maxDepth ${def.maxDepth}; it did not run.`, def.name)), child: facts };
  }
  const raw = leg.opts.raw as ResumeOptions<unknown>;
  const session = raw.session;
  let store = session?.store ?? privateStores.get(leg);
  if (!store) privateStores.set(leg, (store = createInMemoryAgentRunStore()));
  const scope = session?.scope ?? 'default';
  let execution;
  try {
    execution = leg.opts.execution ? leg.opts.execution.child({ ...def.execution, name: def.name }) : undefined;
  } catch (error) {
    return { ...failure(serializeError(error)), child: facts };
  }
  const own = def.agent.engineOptions(runId, {}) as AgentOptions<unknown>;
  const parent: SubAgentParent = { runId: leg.runId, toolCallId: input.toolCallId, modelStep: input.modelStep, tool: def.name, depth };
  const { memory: _memory, chat: _chat, lease: _lease, ...settings } = own;
  const options = {
    ...settings,
    session: { store, runId, scope },
    abortSignal: effectSignal(leg, signal, leg.opts.deadlineAt),
    ...(leg.opts.deadlineAt !== null ? { deadline: Math.min(leg.opts.deadlineAt, own.deadline ?? Infinity) } : {}),
    ...(execution ? { execution } : {}),
    onToolCall: outerCallGuard(raw.onToolCall, own.onToolCall),
    onToolResult: outerResultGuard(raw.onToolResult, own.onToolResult),
    deps: { ...(raw.deps?.clock ? { clock: raw.deps.clock } : {}), ...(raw.deps?.generateId ? { generateId: raw.deps.generateId } : {}), ...own.deps },
    [PARENT]: parent,
  } as AgentOptions<unknown>;
  if (!options.onToolCall) delete options.onToolCall;
  if (!options.onToolResult) delete options.onToolResult;
  const structured = own.output !== undefined;
  const stored = await store.load(runId, { scope }).then((r) => r ?? null, () => undefined);
  let result: AgentResult<unknown>;
  if (stored === null) {
    const args = input.args as { input?: JsonValue };
    result = await childEngine().start({ ...options, prompt: typeof args?.input === 'string' ? args.input : JSON.stringify(args) }).result;
  } else {
    // A record that cannot be read goes to the engine's resume, which refuses it as a failed result.
    const pendingIds = new Set((stored?.pendingApprovals ?? []).map((p) => p.approvalId));
    const unknownIds = new Set(unknownEffectIdsOf(stored?.snapshot));
    // A child that failed for a transient cause goes on from its last checkpoint: the parent's resume is the ask.
    const retryFailed = stored?.status === 'failed' && stored.retry !== undefined;
    result = await childEngine().resume({
      ...options, ...answersFor(raw, pendingIds, unknownIds), ...(retryFailed ? { retryFailed: true } : {}),
    } as ResumeOptions<unknown>).result;
  }
  return outcomeOf(def, facts, result, structured);
}

/** The tool call ids of the calls a stored child run waits on an operator for (its own, and its children's). */
function unknownEffectIdsOf(snapshot: unknown): string[] {
  const s = snapshot as { context?: { batch?: string[] }; children?: Record<string, { snapshot?: { status?: string; value?: unknown; context?: { toolCallId?: string; receipt?: { status?: string; child?: ChildRunFacts } | null } } } | undefined> } | undefined;
  const out: string[] = [];
  for (const id of s?.context?.batch ?? []) {
    const call = s?.children?.[id]?.snapshot;
    if (!call?.context || call.status !== 'active') continue;
    const receipt = call.context.receipt;
    if (receipt?.status === 'executing' && call.context.toolCallId) out.push(call.context.toolCallId);
    for (const effect of receipt?.child?.unknownEffects ?? []) {
      const toolCallId = (effect as { toolCallId?: unknown }).toolCallId;
      if (typeof toolCallId === 'string') out.push(toolCallId);
    }
  }
  return out;
}
