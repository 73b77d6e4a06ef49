/**
 * Drives one scenario through the real engine, with at most one injected
 * fault, and answers every rest the way a careful operator would, until the
 * last leg completes or a bound is reached. Records what the property checks.
 */
import { PLANTED_BUGS, type PlantedBugs } from '../../src/runtime/test-switches.js';
import {
  createInMemoryAgentRunStore, resumeAgent, runAgent,
  type AgentOptions, type AgentResult, type AgentRunStore, type ApprovalResponse, type Message,
  type ReconciledToolResult, type ResumeOptions,
} from 'cairn/agent';
import {
  cloneStore, createCrashPlan, createFaultyStore, createLedger, createMockModel, ledgerKey,
  type CrashCounts, type CrashPlan, type CrashPoint, type Ledger,
} from 'cairn/testing';
import {
  CLIENT_OUTPUT, FAILING_MESSAGE, legCount, makeTools, PLAIN_KINDS, scriptedTurn, toolOutput,
  type Scenario, type ToolKind, type TransientFault,
} from './scenario.js';
import { answerScenario, wireModels, wireServer, type WireFault, type WireFaultMode } from './wire-model.js';
import { createExecutionContext, type ExecutionContext } from 'cairn/policy';
import { replayRun } from 'cairn/machines';

export type Fault =
  | { kind: 'none' }
  | { kind: 'crash'; at: CrashPoint }
  | { kind: 'store'; at: number; mode: 'reject' | 'apply-then-throw' }
  | { kind: 'transient'; at: number }
  /** A fault of a real provider adapter over the local wire server, with or without a fallback model. */
  | { kind: 'wire'; at: number; mode: WireFaultMode; fallback: boolean };

/** Resumes (and restarts) one leg may take before the run counts as stuck. */
export const RESUME_BOUND = 8;
const SCOPE = 'tenant-p';
const runIdOf = (leg: number) => `leg-${leg}`;

export interface DriveReport {
  /** Status of the last result the drive saw (of the last leg it reached). */
  status: AgentResult['status'] | 'crashed' | 'bound-exceeded';
  /** The last leg's final messages (the whole conversation), when it completed. */
  messages: Message[] | undefined;
  /** Per leg: every ledger key and its count. */
  ledgers: Array<Record<string, number>>;
  /** Whether the injected fault happened (a crash point reached, a store fault or a 503 injected). */
  fired: boolean;
  /** Calls seen by the first runtime's crash plan: for the fault-free drive, every crash point. */
  counts: CrashCounts;
  /** The operator asked to run something again: retryToolCallIds or retryFailed. */
  retryAsked: boolean;
  retriedCalls: number;
  /** Retried calls of the approval-gated tool, passing their gate with the verdict the run recorded. */
  retriedGated: number;
  /** Of those, the ones whose verdict the operator sent again (from unknownEffects), which the run also accepts. */
  retriedGatedResent: number;
  reconciledCalls: number;
  retryFailed: number;
  /** Model calls that failed over to the fallback model. */
  failovers: number;
  /** Stored runs replayed through the pure machines at the end of the drive. */
  replays: number;
  /** Resumes and restarts over all legs. */
  resumes: number;
  /** Restarts in a fresh runtime after a crash or a failure. */
  restarts: number;
  /** Invariant (2) and liveness breaches seen while driving. */
  violations: string[];
  trace: string[];
  /** Legs whose ledger was checked (budgeted scenarios). */
  ledgerChecks: number;
}

/** One process: the store object it writes through, and the crash plan that wraps it (first runtime only). */
interface Runtime {
  /** The data underneath, to clone a fresh runtime from. */
  data: AgentRunStore;
  /** What the engine is given. */
  store: AgentRunStore;
  plan: CrashPlan | undefined;
  ids: () => string;
  /** A budgeted scenario's execution context: one per process, so a fresh runtime restores its ledger from the record. */
  execution: ExecutionContext | undefined;
}

/** A root context with a ceiling no scenario reaches: the property checks the ledger's bookkeeping, not refusals. */
const budgetContext = (scenario: Scenario) => (scenario.budget
  ? createExecutionContext({
    // Every model a scenario calls is priced: an unpriced one under a USD ceiling is refused before its call.
    prices: { 'mock:mock-model': { input: 1, output: 2 }, 'wire:scripted': { input: 1, output: 2 }, 'mock:fallback': { input: 1, output: 2 } },
    budget: { usd: 1000, tokens: 100_000_000 },
  })
  : undefined);

type Action =
  | { kind: 'start' }
  | { kind: 'resume'; extra: Partial<ResumeOptions>; retryKeys: Set<string> };

function idGenerator(prefix: string) {
  let n = 0;
  return () => `${prefix}-${++n}`;
}

/** What the operator records for an interrupted call whose effect landed: exactly what the tool returned. */
function reconciledOutput(kind: ToolKind, toolCallId: string): Omit<ReconciledToolResult, 'toolCallId'> {
  if (kind === 'failing') return { output: FAILING_MESSAGE, isError: true };
  return { output: toolOutput(kind, toolCallId) };
}

/**
 * Drives `scenario` from its first leg to its last, with `fault` injected in
 * the first runtime. Every fault ends that runtime: the drive goes on in a
 * fresh one (a new store object over a copy of the data, a new model, the same
 * world: the ledgers and the operator's notes). `bugs` plants known bugs in
 * every leg (see src/runtime/test-switches.ts).
 */
export async function driveScenario(scenario: Scenario, fault: Fault, bugs?: PlantedBugs): Promise<DriveReport> {
  const legs = legCount(scenario);
  const ledgers: Ledger[] = Array.from({ length: legs }, () => createLedger());
  const transient: TransientFault | undefined = fault.kind === 'transient' ? { at: fault.at, calls: 0, fired: false } : undefined;
  const wireFault: WireFault | undefined = fault.kind === 'wire' ? { at: fault.at, mode: fault.mode, calls: 0, fired: false } : undefined;
  const wire = wireFault ? await wireServer() : undefined;
  if (wire) answerScenario(wire, scenario, wireFault!);
  const base = createInMemoryAgentRunStore();
  // Every drive writes through the same stack of store wrappers, faulted or not: parallel calls share
  // saves when they ask while one is in flight, so a store that answers a few microtasks later could
  // make a different number of saves, and a fault's position is counted on the fault-free drive.
  const faulty = createFaultyStore(base, fault.kind === 'store' ? { failSave: { at: fault.at, mode: fault.mode } } : {});
  const plan = createCrashPlan(fault.kind === 'crash' ? { at: fault.at } : {});
  let runtime: Runtime = { data: base, store: plan.wrapStore(faulty), plan, ids: idGenerator('p0'), execution: budgetContext(scenario) };
  let generation = 0;
  const report: DriveReport = {
    status: 'crashed', messages: undefined, ledgers: [], fired: false, counts: plan.counts, retryAsked: false,
    retriedCalls: 0, retriedGated: 0, retriedGatedResent: 0, reconciledCalls: 0, retryFailed: 0, failovers: 0, resumes: 0, restarts: 0, violations: [], trace: [], ledgerChecks: 0, replays: 0,
  };

  const freshRuntime = async (upTo: number) => {
    generation++;
    report.restarts++;
    const runIds = Array.from({ length: upTo + 1 }, (_, i) => runIdOf(i));
    const data = await cloneStore(runtime.data, runIds);
    runtime = { data, store: data, plan: undefined, ids: idGenerator(`p${generation}`), execution: budgetContext(scenario) };
  };

  const options = (leg: number, previous: Message[] | undefined): AgentOptions => {
    const models = wire
      ? wireModels(wire, scenario, fault.kind === 'wire' && fault.fallback)
      : { model: createMockModel({ responses: [(request) => scriptedTurn(scenario, request, transient)], strict: false }) };
    const model = models.model;
    const tools = makeTools(ledgers[leg]!);
    const rt = runtime;
    return {
      model: rt.plan ? rt.plan.wrapModel(model) : model,
      ...(models.fallbackModels ? { fallbackModels: models.fallbackModels } : {}),
      tools: rt.plan ? rt.plan.wrapTools(tools) : tools,
      bindingId: 'crash-property-v1',
      ...(rt.execution ? { execution: rt.execution } : {}),
      // An injected 503 fails the leg (the retryFailed path), instead of being retried within the call.
      maxRetries: 0,
      session: { store: rt.store, runId: runIdOf(leg), scope: SCOPE },
      deps: { clock: { now: () => 1_000 }, generateId: rt.ids, ...(bugs ? { [PLANTED_BUGS]: bugs } : {}) },
      ...(leg === 0 ? { prompt: 'Start.' } : { messages: [...previous!, { role: 'user', content: `Continue ${leg}.` }] }),
    };
  };

  /** Plain calls the stored run holds in `executing`: a leg may run one again only when the operator asked. */
  const interruptedPlainKeys = async (leg: number): Promise<Set<string>> => {
    const stored = await runtime.data.load(runIdOf(leg));
    const out = new Set<string>();
    for (const r of Object.values(stored?.receipts ?? {})) {
      if (r.status === 'executing' && !r.idempotent) out.add(ledgerKey(r.toolName, r.modelStep, r.toolCallId));
    }
    return out;
  };

  let previous: Message[] | undefined;
  for (let leg = 0; leg < legs; leg++) {
    const runId = runIdOf(leg);
    const ledger = ledgers[leg]!;
    let action: Action = { kind: 'start' };
    let result: AgentResult | undefined;
    for (let attempt = 0; ; attempt++) {
      if (attempt > RESUME_BOUND) {
        report.violations.push(`liveness: leg ${leg} did not complete within ${RESUME_BOUND} resumes`);
        report.status = 'bound-exceeded';
        return finish();
      }
      if (attempt > 0) report.resumes++;
      const interrupted = await interruptedPlainKeys(leg);
      const before = ledger.entries();
      const rt = runtime;
      const opts = options(leg, previous);
      const running: Promise<AgentResult> = action.kind === 'start'
        ? runAgent(opts)
        : resumeAgent({ ...opts, ...action.extra, session: opts.session! });
      const outcome = rt.plan ? await rt.plan.race(running) : { crashed: false as const, result: await running };
      // Invariant (2): an interrupted plain call runs again only when this resume asked for it.
      const after = ledger.entries();
      for (const [key, n] of Object.entries(after)) {
        if (n > (before[key] ?? 0) && interrupted.has(key) && !(action.kind === 'resume' && action.retryKeys.has(key))) {
          report.violations.push(`guess: leg ${leg} ran the interrupted plain call ${key} again without retryToolCallIds`);
        }
      }
      if (outcome.crashed) {
        report.trace.push(`leg ${leg}: crashed (${action.kind})`);
        await freshRuntime(leg);
        action = (await runtime.data.load(runId)) ? { kind: 'resume', extra: {}, retryKeys: new Set() } : { kind: 'start' };
        continue;
      }
      result = outcome.result;
      report.failovers += result.warnings.filter((w) => w.setting === 'fallbackModels').length;
      report.trace.push(`leg ${leg}: ${result.status}${result.status === 'stopped' ? `/${result.reason}` : ''}${result.status === 'failed' ? `/${result.error.code}${result.retry ? '+retry' : ''}` : ''}`);
      if (result.status === 'completed') break;
      if (result.status === 'suspended') {
        const approvalResponses = result.pendingApprovals.map(
          (pending): ApprovalResponse => ({ approvalId: pending.approvalId, token: pending.token, approved: true }),
        );
        const clientToolResults = result.pendingClientCalls.map((call) => ({ toolCallId: call.toolCallId, output: CLIENT_OUTPUT }));
        action = { kind: 'resume', extra: { approvalResponses, clientToolResults }, retryKeys: new Set() };
        continue;
      }
      if (result.status === 'stopped' && result.reason === 'tool-reconciliation-required') {
        // Look each effect up in the system it touched (the ledger): it landed, record what the tool
        // returned; it did not, run it once more (a gated call passes with the verdict the run recorded).
        const reconciledToolResults: ReconciledToolResult[] = [];
        const retryToolCallIds: string[] = [];
        const retryKeys = new Set<string>();
        const approvalResponses: ApprovalResponse[] = [];
        for (const receipt of result.unknownEffects ?? []) {
          const key = ledgerKey(receipt.toolName, receipt.modelStep, receipt.toolCallId);
          if (ledger.count(key) > 0) {
            reconciledToolResults.push({ toolCallId: receipt.toolCallId, ...reconciledOutput(receipt.toolName as ToolKind, receipt.toolCallId) });
          } else {
            retryToolCallIds.push(receipt.toolCallId);
            retryKeys.add(key);
            if (receipt.toolName === 'gated') {
              // The stopped result says the call ran under an approval, and which: the run recorded the verdict.
              const approval = receipt.approval;
              if (approval?.approved !== true) {
                report.violations.push(`approval: unknown effect ${key} of the gated tool does not carry its recorded approval`);
              }
              // For half of the call ids the operator also sends that verdict again: both ways must pass the gate.
              if (approval && Number(receipt.toolCallId.slice(1)) % 2 === 1) {
                approvalResponses.push({ approvalId: approval.approvalId, token: approval.token, approved: true });
                report.retriedGatedResent++;
              }
              report.retriedGated++;
            }
          }
        }
        report.reconciledCalls += reconciledToolResults.length;
        report.retriedCalls += retryToolCallIds.length;
        if (retryToolCallIds.length > 0) report.retryAsked = true;
        action = { kind: 'resume', extra: { reconciledToolResults, retryToolCallIds, approvalResponses }, retryKeys };
        continue;
      }
      if (result.status === 'failed' && result.retry) {
        report.retryAsked = true;
        report.retryFailed++;
        await freshRuntime(leg);
        action = { kind: 'resume', extra: { retryFailed: true }, retryKeys: new Set() };
        continue;
      }
      if (result.status === 'failed' && result.error.code === 'persistence_failed') {
        await freshRuntime(leg);
        action = (await runtime.data.load(runId)) ? { kind: 'resume', extra: {}, retryKeys: new Set() } : { kind: 'start' };
        continue;
      }
      // Stopped for another reason, or failed for good: the run ended without completing.
      report.status = result.status;
      return finish();
    }
    if (scenario.budget) await checkLedger(leg, result, previous);
    previous = result.messages;
    report.status = 'completed';
  }
  report.messages = previous;
  return finish();

  /**
   * A budgeted leg that completed: its record's ledger holds each reservation
   * once, none is left reserved, and exactly one is committed for each turn the
   * run recorded (a call lost in a crash is held as unknown, never counted twice).
   */
  async function checkLedger(leg: number, result: AgentResult, before: Message[] | undefined): Promise<void> {
    report.ledgerChecks++;
    const stored = await runtime.data.load(runIdOf(leg));
    const entries = stored?.ledger?.entries ?? [];
    const ids = entries.map((e) => e.id);
    if (new Set(ids).size !== ids.length) report.violations.push(`ledger: leg ${leg} holds a reservation twice`);
    if (entries.some((e) => e.status === 'reserved')) report.violations.push(`ledger: leg ${leg} ended with a reservation still open`);
    const turns = result.messages.slice(before?.length ?? 0).filter((m) => m.role === 'assistant').length;
    const committed = entries.filter((e) => e.runId === runIdOf(leg) && e.status === 'committed').length;
    if (committed !== turns) report.violations.push(`ledger: leg ${leg} recorded ${turns} turns and committed ${committed} calls`);
    const totals = result.accounting;
    const sum = entries.filter((e) => e.status === 'committed' && e.usd !== null).reduce((n, e) => n + e.usd!, 0);
    if (Math.abs(totals.committed.usd - sum) > 1e-9 || totals.reserved.tokens !== 0) {
      report.violations.push(`ledger: leg ${leg} reports ${JSON.stringify(totals)} against ${sum} committed in its record`);
    }
  }

  async function finish(): Promise<DriveReport> {
    // Every run the drive left in the store replays, through the pure machines, to the snapshot it holds.
    for (let leg = 0; leg < legs; leg++) {
      const stored = await runtime.data.load(runIdOf(leg));
      if (!stored) continue;
      const replay = replayRun(stored);
      report.replays += 1;
      if (!replay.reached) {
        const d = replay.divergence!;
        report.violations.push(`replay: leg ${leg} (${stored.status}) diverged at step ${d.step}: ${d.message} ${d.path ?? ''} expected ${JSON.stringify(d.expected)?.slice(0, 300)} found ${JSON.stringify(d.found)?.slice(0, 300)}`);
      }
    }
    report.ledgers = ledgers.map((l) => l.entries());
    report.counts = plan.counts;
    report.fired = fault.kind === 'none' ? false
      : fault.kind === 'crash' ? plan.fired
        : fault.kind === 'store' ? (faulty?.injected.length ?? 0) > 0
          : fault.kind === 'wire' ? wireFault!.fired
            : transient!.fired;
    return report;
  }
}

/** Ledger keys of the tools whose effect must run at most once. */
export function isPlainKey(key: string): boolean {
  return PLAIN_KINDS.some((kind) => key.startsWith(`${kind}@`));
}

/**
 * A ledger with the model step taken out of each key (`plain@3:c1` → `plain:c1`, counts summed):
 * a retried model call counts as a step, so it shifts the steps of every later call.
 */
export function byCall(ledger: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, n] of Object.entries(ledger)) {
    const name = key.slice(0, key.indexOf('@'));
    const id = key.slice(key.indexOf(':') + 1);
    out[`${name}:${id}`] = (out[`${name}:${id}`] ?? 0) + n;
  }
  return out;
}
