/**
 * Drives a memory and chat scenario (memory-chat-world.ts) through the real
 * engine with at most one write fault, the way a careful operator would:
 * approve what waits, reconcile or retry an interrupted call from the tool's
 * own ledger, go on in a fresh process after a crash or a failed save, and
 * call reconcileAgentRun({ session, memory, chat }) once each leg has ended.
 * Records what the property checks.
 */
import {
  cancelAgentRun, createInMemoryAgentRunStore, reconcileAgentRun, resumeAgent, runAgent,
  type AgentOptions, type AgentResult, type AgentRunEnvelope, type AgentRunStore, type Message, type ResumeOptions,
} from 'cairn/agent';
import type { ChatRecord } from 'cairn/chat';
import type { MemoryRecord, MemoryStore } from 'cairn/memory';
import { cloneStore, createLedger, createMockModel, ledgerKey, type Ledger } from 'cairn/testing';
import type { AgentMemoryOptions } from '../../src/memory/run-types.js';
import type { AgentChatOptions } from '../../src/chat/projection-types.js';
import {
  createSystems, legTools, memoryLlm, Process, scriptedTurn, wrapChatStore, wrapMemoryStore, wrapRunStore,
  type Landed, type MemChatScenario, type WriteFault, type WriteKind,
} from './memory-chat-world.js';

const SCOPE = 'tenant-m';
const MEMORY_SCOPE = { userId: 'ada' };
const CHAT_ID = 'chat-ada';
const runIdOf = (leg: number) => `mleg-${leg}`;
/** Attempts (starts, resumes, reconciliations) one leg may take before the drive counts as stuck. */
export const ATTEMPT_BOUND = 12;

export interface MemChatReport {
  /** Per leg: the status its last result had (completed, or stopped at max-steps). */
  statuses: string[];
  /** The last leg's final conversation. */
  messages: Message[] | undefined;
  /** Per leg: the stored record after the drive. */
  records: Array<AgentRunEnvelope | undefined>;
  chat: ChatRecord | undefined;
  memories: MemoryRecord[];
  landed: Record<string, number>;
  ledgers: Array<Record<string, number>>;
  /** Every write the drive made, in order, by kind (of the fault-free drive: every point a fault can hit). */
  writes: WriteKind[];
  /** Per write: where the run was for a save of its record (its top-level state, `cancel` for a queued cancel), else ''. */
  states: string[];
  fired: boolean;
  violations: string[];
  trace: string[];
  /** Fresh processes the drive took, and reconciliations that found something to settle. */
  restarts: number;
  settled: number;
}

/**
 * Drives `scenario` to its end with `fault` in the first process. `breakConfirm`
 * plants a bug for the check that the property can fail: the memory store the
 * reconciliation confirms with never finds an operation's records.
 */
export async function driveMemChat(scenario: MemChatScenario, fault: WriteFault, breakConfirm = false): Promise<MemChatReport> {
  const systems = createSystems(scenario);
  if (systems.seeded) {
    await systems.memory.add({ id: 'old-1', scope: MEMORY_SCOPE, text: 'old: leg 0 fact 0 was the first guess', metadata: {}, at: 1 });
  }
  const counter = { n: 0, kinds: [] as WriteKind[], states: [] as string[] };
  const landed: Landed = new Map();
  const ledgers: Ledger[] = scenario.legs.map(() => createLedger());
  const report: MemChatReport = {
    statuses: [], messages: undefined, records: [], chat: undefined, memories: [], landed: {}, ledgers: [], writes: [], states: [], fired: false,
    violations: [], trace: [], restarts: 0, settled: 0,
  };
  let generation = 0;
  // Ids are unique over the whole drive: two runs (or two processes) never share an operation id or a record id.
  let ids = 0;
  const nextId = (kind: string) => `${kind}${generation}-${++ids}`;
  const first = new Process(counter, fault);
  let proc = first;
  let data: AgentRunStore = createInMemoryAgentRunStore();
  let runs = wrapRunStore(data, proc);

  const fresh = async () => {
    generation++;
    report.restarts++;
    data = await cloneStore(data, scenario.legs.map((_, i) => runIdOf(i)));
    proc = new Process(counter, { kind: 'none' });
    runs = wrapRunStore(data, proc);
  };
  const memoryOf = (confirmBroken = false): AgentMemoryOptions => {
    const store: MemoryStore = wrapMemoryStore(systems.memory, proc, landed);
    return {
      seams: {
        store: confirmBroken ? { ...store, list: async () => [] } : store,
        llm: memoryLlm(scenario),
        clock: { now: () => 1_000, setTimeout: () => () => undefined },
        generateId: () => nextId('m'),
      },
      scope: MEMORY_SCOPE,
    };
  };
  const chatOf = (): AgentChatOptions => ({ store: wrapChatStore(systems.chats, scenario.conditional, proc), chatId: CHAT_ID, scope: MEMORY_SCOPE });

  let previous: Message[] | undefined;
  for (let leg = 0; leg < scenario.legs.length; leg++) {
    const script = scenario.legs[leg]!;
    const runId = runIdOf(leg);
    const input: Message[] = leg === 0 ? [{ role: 'user', content: 'Start.' }] : [...previous!, { role: 'user', content: `Continue ${leg}.` }];
    const options = (): AgentOptions => {
      return {
        model: createMockModel({ responses: [(request) => scriptedTurn(scenario, leg, request, input.length)], strict: false }),
        tools: legTools(ledgers[leg]!, proc),
        messages: input,
        maxSteps: script.stops ? script.calls.length : 10,
        bindingId: 'memory-chat-property-v1',
        memory: memoryOf(),
        chat: chatOf(),
        session: { store: runs, runId, scope: SCOPE },
        deps: { clock: { now: () => 1_000 }, generateId: () => nextId('p') },
      };
    };
    let action: { kind: 'start' } | { kind: 'resume'; extra: Partial<ResumeOptions> } = { kind: 'start' };
    let result: AgentResult | undefined;
    for (let attempt = 0; ; attempt++) {
      if (attempt > ATTEMPT_BOUND) {
        report.violations.push(`liveness: leg ${leg} did not end within ${ATTEMPT_BOUND} attempts`);
        return finish();
      }
      const opts = options();
      const p = proc;
      const running: Promise<AgentResult> = action.kind === 'start' ? runAgent(opts) : resumeAgent({ ...opts, ...action.extra, session: opts.session! });
      const outcome = await p.race(running);
      if (outcome.crashed) {
        report.trace.push(`leg ${leg}: crashed (${action.kind})`);
        await fresh();
        action = (await data.load(runId)) ? { kind: 'resume', extra: {} } : { kind: 'start' };
        continue;
      }
      result = outcome.result;
      report.trace.push(`leg ${leg}: ${result.status}${result.status === 'stopped' ? `/${result.reason}` : ''}${result.status === 'failed' ? `/${result.error.code}` : ''}`);
      if (result.status === 'completed' || (result.status === 'stopped' && result.reason === 'max-steps')) break;
      if (script.cancels && result.status === 'stopped' && result.reason === 'aborted') break;
      if (result.status === 'suspended' && script.cancels) {
        // Nobody drives the run: queue the cancel (unless an earlier attempt's request landed), and resume without a verdict.
        if ((await data.load(runId))?.cancel === undefined) {
          const queued = await proc.race(cancelAgentRun({ session: { store: runs, runId, scope: SCOPE }, reason: 'withdrawn', deps: { clock: { now: () => 1_000 } } })
            .then((answer) => answer.outcome, (error: unknown) => `rejected (${String((error as Error).message).slice(0, 60)})`));
          report.trace.push(`leg ${leg}: cancel ${queued.crashed ? 'crashed' : queued.result}`);
          if (queued.crashed) await fresh();
        }
        action = { kind: 'resume', extra: {} };
        continue;
      }
      if (result.status === 'suspended') {
        const approvalResponses = result.pendingApprovals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: true }));
        action = { kind: 'resume', extra: { approvalResponses } };
        continue;
      }
      if (result.status === 'stopped' && result.reason === 'tool-reconciliation-required') {
        // The tool's ledger says whether the effect landed: record what it returned, or run it once more.
        const reconciledToolResults = [];
        const retryToolCallIds = [];
        for (const r of result.unknownEffects ?? []) {
          if (ledgers[leg]!.count(ledgerKey(r.toolName, r.modelStep, r.toolCallId)) > 0) {
            reconciledToolResults.push({ toolCallId: r.toolCallId, output: `${r.toolName} done for ${r.toolCallId}` });
          } else retryToolCallIds.push(r.toolCallId);
        }
        action = { kind: 'resume', extra: { reconciledToolResults, retryToolCallIds } };
        continue;
      }
      if (result.status === 'failed' && result.error.code === 'persistence_failed') {
        await fresh();
        action = (await data.load(runId)) ? { kind: 'resume', extra: {} } : { kind: 'start' };
        continue;
      }
      report.violations.push(`leg ${leg} ended ${result.status}: ${JSON.stringify(result.status === 'failed' ? result.error : result)}`);
      return finish();
    }
    report.statuses.push(result.status);
    // The leg's executor is done: settle what it left, in as many processes as the faults take.
    for (let attempt = 0; ; attempt++) {
      if (attempt > ATTEMPT_BOUND) {
        report.violations.push(`liveness: leg ${leg} was not reconciled within ${ATTEMPT_BOUND} attempts`);
        return finish();
      }
      const before = (await data.load(runId))?.revision;
      const outcome = await proc.race(reconcileAgentRun({ session: { store: runs, runId, scope: SCOPE }, memory: memoryOf(breakConfirm), chat: chatOf() }).then(
        (answer) => ({ ok: true as const, answer }), (error: unknown) => ({ ok: false as const, error }),
      ));
      if (outcome.crashed) {
        report.trace.push(`leg ${leg}: reconcile crashed`);
        await fresh();
        continue;
      }
      if (!outcome.result.ok) {
        report.trace.push(`leg ${leg}: reconcile rejected (${String((outcome.result.error as Error).message).slice(0, 80)})`);
        await fresh();
        continue;
      }
      if ((await data.load(runId))?.revision !== before) report.settled++;
      report.trace.push(`leg ${leg}: reconciled ${JSON.stringify(outcome.result.answer)}`);
      break;
    }
    previous = result.messages;
  }
  report.messages = previous;
  return finish();

  async function finish(): Promise<MemChatReport> {
    report.records = await Promise.all(scenario.legs.map((_, i) => data.load(runIdOf(i))));
    report.chat = await systems.chats.loadChat(CHAT_ID);
    report.memories = await systems.memory.list({ scope: MEMORY_SCOPE });
    report.landed = Object.fromEntries(landed);
    report.ledgers = ledgers.map((l) => l.entries());
    report.writes = counter.kinds;
    report.states = counter.states;
    report.fired = first.fired || counter.n >= (fault.kind === 'none' ? Infinity : fault.at);
    return report;
  }
}
