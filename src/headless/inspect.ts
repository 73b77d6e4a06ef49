/**
 * inspectRun: the report of a stored run, read without a model call, a tool
 * call or a write.
 */
import { hierarchyOf } from '../delegation/agent-tool-hierarchy.js';
import { checkEnvelope } from '../agent/envelope.js';
import type { AgentRunStoreV3 } from '../v3/store-types.js';
import { readableRecord } from '../v3/store-read.js';
import { describeUnknownEffects, interruptedCalls } from '../agent/interrupted.js';
import { resultBase } from '../agent/result.js';
import type { AgentResult, AgentRunEnvelope, AgentRunStore, Usage } from '../agent/types.js';
import type { RunContext } from '../../machines/index.js';
import { CairnTypeError } from '../errors/index.js';
import { parseModelKey } from '../models/resolve.js';
import { bundledPriceProvider, priceOrNull } from './prices.js';
import {
  approvalAction, clientAction, reportOf, storedPhase, unknownEffectAction,
} from './report.js';
import type { HeadlessReport, HeadlessWarning, PendingAction, PriceProvider } from './types.js';

export const DEFAULT_HEADLESS_SCOPE = 'headless';

export interface InspectRunOptions {
  /** The scope the run was stored under. @default 'headless' */
  scope?: string;
  /** Prices the run's usage. @default the bundled price table */
  priceProvider?: PriceProvider;
}


/** The run's cost so far: complete only when the model has a price. */
export async function costOf(
  provider: PriceProvider,
  model: { provider: string; modelId: string },
  usage: Usage,
  /** Usage by `provider:modelId` when more than one model answered: each is priced at its own price. */
  byModel?: Record<string, Usage>,
): Promise<{ usd: number; complete: boolean }> {
  if (byModel && Object.keys(byModel).length > 0) {
    let usd = 0;
    let complete = true;
    for (const [key, part] of Object.entries(byModel)) {
      const priced = await priceOrNull(provider, parseModelKey(key), part);
      if (priced === null) complete = false;
      else usd += priced;
    }
    return { usd, complete };
  }
  const usd = await priceOrNull(provider, model, usage);
  return usd === null ? { usd: 0, complete: false } : { usd, complete: true };
}

/** What an unfinished stored run waits for, from the record alone. */
export function storedPending(envelope: AgentRunEnvelope): PendingAction[] {
  const pending: PendingAction[] = [];
  if (envelope.status === 'running' || envelope.status === 'drained') {
    pending.push({ kind: 'resume', resumeWith: null, phase: storedPhase(envelope) });
  }
  pending.push(...envelope.pendingApprovals.map(approvalAction));
  const gated = new Set(envelope.pendingApprovals.map((p) => `${p.modelStep}:${p.toolCallId}`));
  pending.push(...envelope.pendingClientCalls.filter((c) => !gated.has(`${c.modelStep}:${c.toolCallId}`)).map(clientAction));
  pending.push(...describeUnknownEffects(interruptedCalls(envelope), envelope.approvals).map(unknownEffectAction));
  return pending;
}

/** The report of a stored envelope. */
async function reportOfStored(envelope: AgentRunEnvelope, priceProvider: PriceProvider): Promise<HeadlessReport<unknown>> {
  const context = (envelope.snapshot as unknown as { context: RunContext }).context;
  const base = resultBase(envelope.runId, context, []);
  const cost = await costOf(priceProvider, parseModelKey(envelope.binding.model), base.usage, base.usageByModel);
  const warnings: HeadlessWarning[] = [];
  const ended = envelope.status === 'completed' || envelope.status === 'failed' || envelope.status === 'stopped';
  if (ended && envelope.result) {
    const stored = envelope.result as AgentResult<unknown>;
    const result = stored.status === 'failed' && !stored.retry && envelope.retry
      ? { ...stored, retry: { cause: envelope.retry.cause, phase: envelope.retry.phase } }
      : stored;
    return reportOf(result, { cost, warnings });
  }
  const pending = storedPending(envelope);
  if (envelope.status === 'suspended') {
    const report = reportOf({
      ...base, status: 'suspended', pendingApprovals: envelope.pendingApprovals, pendingClientCalls: envelope.pendingClientCalls,
    }, { cost, warnings });
    report.pending = pending;
    return report;
  }
  if (envelope.status === 'drained') {
    return reportOf({ ...base, status: 'stopped', reason: 'drained' }, { cost, warnings, drainedPending: pending });
  }
  // No result yet: the run is between saves, or its executor is gone. A plain resume goes on.
  const report = reportOf({ ...base, status: 'stopped', reason: 'drained' }, { cost, warnings, drainedPending: pending, status: 'in-progress' });
  delete report.reason;
  return report;
}

/**
 * Reads a stored run and reports how it stands, without a model call or a
 * write. A run with no result yet reports `status: 'in-progress'` with a pending
 * plain resume and every call that started without a recorded outcome; that
 * picture holds only while no executor drives the run. An unknown run id
 * rejects with a TypeError.
 */
export async function inspectRun(store: AgentRunStore | AgentRunStoreV3, runId: string, options: InspectRunOptions = {}): Promise<HeadlessReport<unknown>> {
  if (!store || typeof store.load !== 'function') throw new CairnTypeError('invalid_options', 'inspectRun: store must implement load(runId).');
  if (typeof runId !== 'string' || runId === '') throw new CairnTypeError('invalid_options', 'inspectRun: runId must be a non-empty string.');
  const scope = options.scope ?? DEFAULT_HEADLESS_SCOPE;
  const envelope = await store.load(runId, { scope });
  if (envelope === undefined) throw new CairnTypeError('run_not_found', `inspectRun: no run ${JSON.stringify(runId)} in this store.`, { runId });
  // A V3 store's record is reported as the run it is (readableRecord: the engine's view of it).
  const checked = checkEnvelope(readableRecord(store, envelope), runId, scope);
  const report = await reportOfStored(checked, options.priceProvider ?? bundledPriceProvider);
  // Where the run stands among sub-agent runs (docs/delegation.md#sub-agents).
  const { parentRunId, childRuns } = hierarchyOf(checked);
  return { ...report, ...(parentRunId !== null ? { parentRunId } : {}), ...(childRuns.length > 0 ? { childRuns } : {}) };
}
