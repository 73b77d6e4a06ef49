/**
 * runAgentGroup and resumeAgentGroup: the host of the swarm chart. One loop
 * takes one event at a time (a task's end, a spawn, a budget refusal), moves
 * the chart, saves the next record with its journal events, and only then
 * starts the runs the record marks `running`. A save that fails stops the leg
 * (`interrupted`) before anything depends on it; the next leg goes on from
 * the last record that landed, and each task's run from its own record.
 */
import { createActor, type Actor } from 'xstate';
import { swarmMachine, SWARM_MACHINE_VERSION, isTaskEnded } from '../../machines/swarm.js';
import type { SwarmContext, SwarmEvent, SwarmTaskOutcome } from '../../machines/swarm-types.js';
import { CairnError, ExecutionPolicyError, RunBusyError, serializeError, type SerializedError } from '../errors/index.js';
import type { AgentResult, JsonValue } from '../agent/types.js';
import { toJson } from '../agent/json.js';
import { totalsOf } from '../policy/ledger.js';
import { SwarmError } from './errors.js';
import { taskRunId } from './dag.js';
import { budgetSpent, mergeEntries } from './ledger.js';
import { normalizeGroup, type NormalizedGroup } from './options.js';
import { journalOf, recordOf } from './record.js';
import { checkSpawn } from './spawn.js';
import { pause, RETRY_PAUSE_MS, SwarmSaver } from './saver.js';
import { runTaskLeg } from './task-run.js';
import type { SpawnRequest } from './tools.js';
import type { ResumeAgentGroupOptions, RunAgentGroupOptions, SwarmJournalEventInput, SwarmRecord, SwarmResult, SwarmTaskResult } from './types.js';

/**
 * Failures of a task's run that say nothing about the task: its store or its
 * executor. The task's run is resumed (up to RUN_ATTEMPTS times in a leg),
 * then left to a later leg.
 */
const RUN_ATTEMPTS = 3;
// execution_context_mismatch: the run's record holds reservations the shared ledger does not yet (a write of a process
// that died landed after this leg restored the ledger); the next attempt restores them from the record first.
const INTERRUPTIONS = new Set(['persistence_failed', 'revision_conflict', 'lease_lost', 'lease_held', 'run_busy', 'store_unreachable', 'execution_context_mismatch']);

const active = new WeakMap<object, Set<string>>();

type Item =
  | { kind: 'ended'; taskId: string; result: AgentResult<unknown> }
  | { kind: 'spawn'; taskId: string; request: SpawnRequest; key: string; resolve: (v: { taskId: string }) => void; reject: (e: unknown) => void };

/**
 * Runs a DAG of agent tasks under one shared execution context, each task a
 * durable agent run (`<swarmId>.<taskId>`). Called again with the same swarm
 * id, it goes on from what the store holds. Rejects only for input that
 * cannot start (SwarmError, InvalidOptionsError, ExecutionPolicyError): then
 * nothing was run or written.
 *
 * @example
 * ```ts
 * const store = createInMemorySwarmStore();
 * const result = await runAgentGroup({
 *   session: { store, swarmId: 'report-1', scope: 'tenant-a' },
 *   execution: createExecutionContext({ budget: { usd: 1 } }),
 *   tasks: [
 *     { id: 'research', agent: researcher, input: 'Collect the facts.' },
 *     { id: 'write', agent: writer, input: 'Write the report.', dependsOn: ['research'] },
 *   ],
 * });
 * ```
 */
export function runAgentGroup(options: RunAgentGroupOptions): Promise<SwarmResult> {
  return drive(options, false);
}

/** Goes on with a stored swarm (SwarmError `swarm_not_found` when there is none), with verdicts for its suspended tasks. */
export function resumeAgentGroup(options: ResumeAgentGroupOptions): Promise<SwarmResult> {
  return drive(options, true);
}

async function drive(options: ResumeAgentGroupOptions, resume: boolean): Promise<SwarmResult> {
  const g = normalizeGroup(options);
  let held = active.get(g.store);
  if (!held) active.set(g.store, (held = new Set()));
  if (held.has(g.swarmId)) throw new RunBusyError(g.swarmId);
  held.add(g.swarmId);
  try {
    const stored = await g.store.loadSwarm(g.swarmId, { scope: g.scope });
    if (!stored && resume) throw new SwarmError('swarm_not_found', g.swarmId, `No swarm ${g.swarmId} in this store.`);
    if (stored) await checkStored(g, stored);
    return await new Leg(g, stored).run();
  } finally {
    held.delete(g.swarmId);
  }
}

async function checkStored(g: NormalizedGroup, stored: SwarmRecord): Promise<void> {
  if (stored.kind !== 'cairn-swarm' || stored.version !== 1 || stored.machine?.id !== 'swarm' || stored.machine.version !== SWARM_MACHINE_VERSION) {
    throw new CairnError('record_version_unsupported', `Swarm ${g.swarmId}: the stored record is not one this version reads.`, { fault: 'user' });
  }
  if (stored.definition !== g.definition) {
    throw new SwarmError('swarm_definition_changed', g.swarmId, `Swarm ${g.swarmId} was started with other tasks (ids, dependencies, agents' names or inputs); resume it with the same ones.`);
  }
  if (stored.ledger && stored.ledger.scope !== g.execution.path) {
    throw new ExecutionPolicyError('execution_context_mismatch', `Swarm ${g.swarmId} ran under execution context ${stored.ledger.scope}; this leg has ${g.execution.path}.`);
  }
  // The budget goes on where it stood: the swarm's entries and each task run's own slice, the most settled copy of each.
  const lists = [stored.ledger?.entries ?? []];
  for (const task of Object.values(stored.tasks)) {
    const envelope = await g.store.runs.load(task.runId, { scope: g.scope });
    if (envelope?.ledger) lists.push(envelope.ledger.entries);
  }
  await g.execution.ledger.restore(mergeEntries(lists));
}

class Leg {
  private readonly actor: Actor<typeof swarmMachine>;
  private readonly saver: SwarmSaver;
  private readonly createdAt: number;
  /** Tasks this leg launched, and how many times each ran into its store. */
  private readonly launched = new Set<string>();
  private readonly attempts = new Map<string, number>();
  private readonly queue: Item[] = [];
  private wake: (() => void) | null = null;
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly results = new Map<string, AgentResult<unknown>>();
  private interrupted: SerializedError | null = null;

  constructor(private readonly g: NormalizedGroup, private readonly stored: SwarmRecord | undefined) {
    this.actor = stored
      ? createActor(swarmMachine, { snapshot: stored.snapshot } as never)
      : createActor(swarmMachine, { input: { concurrency: g.concurrency, tasks: g.tasks.map((t) => ({ id: t.id, dependsOn: t.dependsOn ?? [] })) } });
    this.actor.subscribe({ error: () => undefined });
    this.actor.start();
    this.saver = new SwarmSaver(g.store, stored?.revision ?? 0);
    this.createdAt = stored?.createdAt ?? g.now();
  }

  private get context(): SwarmContext {
    return this.actor.getSnapshot().context;
  }

  async run(): Promise<SwarmResult> {
    if (!this.stored) {
      if (!(await this.step({ type: 'START' }, [{ type: 'swarm-started', data: { tasks: this.g.tasks.length } }]))) return this.finish();
    } else {
      const answered = Object.keys(this.g.approvalResponses).filter((id) => this.context.tasks[id]?.status === 'suspended');
      if (answered.length > 0 && !(await this.step({ type: 'RESUME', taskIds: answered }))) return this.finish();
    }
    await this.startRunning();
    while (this.inFlight.size > 0 || this.queue.length > 0) {
      const item = await this.next();
      if (item.kind === 'spawn') await this.spawn(item);
      else {
        this.inFlight.delete(item.taskId);
        await this.ended(item.taskId, item.result);
      }
      if (!this.interrupted) await this.startRunning();
    }
    return this.finish();
  }

  private next(): Promise<Item> {
    const item = this.queue.shift();
    if (item) return Promise.resolve(item);
    return new Promise((resolve) => {
      this.wake = () => {
        this.wake = null;
        resolve(this.queue.shift()!);
      };
    });
  }

  private push(item: Item): void {
    this.queue.push(item);
    this.wake?.();
  }

  /** Moves the chart and saves the record with the step's journal events. False when the save failed: the leg stops. */
  private async step(event: SwarmEvent, extra: SwarmJournalEventInput[] = [], endData?: JsonValue): Promise<boolean> {
    if (this.interrupted) return false;
    // A swarm that ended takes no more steps (and journals its end once).
    if (this.actor.getSnapshot().status === 'done') return true;
    const before = this.context;
    this.actor.send(event);
    const snapshot = this.actor.getSnapshot();
    const events = [...extra, ...journalOf(this.g.swarmId, before, snapshot.context)];
    if (event.type === 'TASK_ENDED' && endData) {
      // The end event says why: the failed run's error code, or the stopped run's reason.
      for (const e of events) if (e.taskId === event.taskId && e.type !== 'task-ready' && e.type !== 'task-started') e.data = endData;
    }
    if (snapshot.status === 'done') events.push({ type: snapshot.value === 'completed' ? 'swarm-completed' : 'swarm-failed' });
    const ex = this.g.execution;
    const entries = await ex.ledger.entries(ex.path);
    const saved = await this.saver.save((revision) => recordOf({
      swarmId: this.g.swarmId, scope: this.g.scope, revision,
      snapshot: toJson(this.actor.getPersistedSnapshot()) as JsonValue, context: snapshot.context, value: snapshot.value,
      definition: this.g.definition, ledger: { scope: ex.path, entries }, createdAt: this.createdAt, now: this.g.now(),
    }), events);
    if (!saved) this.interrupted = this.saver.failed;
    return saved;
  }

  /** Starts every task the record marks running that this leg does not run yet (after the save that marked it). */
  private async startRunning(): Promise<void> {
    if (this.g.abortSignal?.aborted) return;
    const starting = this.context.order.filter((id) => this.context.tasks[id]!.status === 'running' && !this.inFlight.has(id));
    if (starting.length === 0) return;
    const fresh = starting.filter((id) => !this.launched.has(id) && this.stored?.tasks[id]?.status !== 'running');
    if (fresh.length > 0 && (await budgetSpent(this.g.execution))) {
      // Nothing left to admit a first model call with: the tasks the last step started end unrun.
      for (const id of fresh) this.track(id, Promise.resolve(budgetRefusal(taskRunId(this.g.swarmId, id))));
      starting.splice(0, starting.length, ...starting.filter((id) => !fresh.includes(id)));
    }
    for (const taskId of starting) {
      this.launched.add(taskId);
      this.track(taskId, this.launch(taskId).catch((error) => failure(taskRunId(this.g.swarmId, taskId), error)));
    }
  }

  /**
   * A task counts as in flight from its launch until the loop has taken its
   * end (not merely until its run returned): so no step in between starts it
   * a second time.
   */
  private track(taskId: string, run: Promise<AgentResult<unknown>>): void {
    this.inFlight.set(taskId, run.then((result) => this.push({ kind: 'ended', taskId, result })));
  }

  private launch(taskId: string): Promise<AgentResult<unknown>> {
    const g = this.g;
    const task = this.context.tasks[taskId]!;
    const spec = g.tasks.find((t) => t.id === taskId);
    const agent = task.spawn ? g.agents[task.spawn.agent]! : typeof spec!.agent === 'string' ? g.agents[spec!.agent]! : spec!.agent;
    const execution = g.contexts.get(taskId) ?? g.execution.child({ name: taskId, ...(task.spawn?.budget ? { budget: task.spawn.budget } : {}) });
    return runTaskLeg({
      store: g.store, swarmId: g.swarmId, scope: g.scope, taskId, runId: taskRunId(g.swarmId, taskId), agent, execution,
      blackboard: g.blackboard, agentNames: Object.keys(g.agents), now: g.now,
      prompt: async () => {
        if (task.spawn) return task.spawn.prompt;
        if (typeof spec!.input === 'string') return spec!.input;
        return spec!.input(await this.dependencyResults(task.dependsOn));
      },
      spawn: (request, key) => new Promise((resolve, reject) => this.push({ kind: 'spawn', taskId, request, key, resolve, reject })),
      ...(g.approvalResponses[taskId] ? { approvalResponses: g.approvalResponses[taskId] } : {}),
      ...(g.abortSignal ? { abortSignal: g.abortSignal } : {}),
    });
  }

  private async dependencyResults(ids: readonly string[]) {
    const out: Record<string, { taskId: string; text: string; output?: unknown }> = {};
    for (const id of ids) {
      const result = this.results.get(id) ?? (await this.g.store.runs.load(taskRunId(this.g.swarmId, id), { scope: this.g.scope }))?.result as AgentResult<unknown> | undefined;
      out[id] = { taskId: id, text: result?.text ?? '', ...(result && 'output' in result && result.output !== undefined ? { output: result.output } : {}) };
    }
    return out;
  }

  private async ended(taskId: string, result: AgentResult<unknown>): Promise<void> {
    if (this.interrupted) return;
    if (result.status === 'failed' && INTERRUPTIONS.has(result.error.code)) {
      // The task's store failed, not the task: it stays running, and its run is resumed from its last save.
      const attempts = (this.attempts.get(taskId) ?? 0) + 1;
      this.attempts.set(taskId, attempts);
      if (attempts >= RUN_ATTEMPTS) this.interrupted = result.error;
      else await pause(RETRY_PAUSE_MS * 2 ** attempts);
      return;
    }
    if (result.status === 'stopped' && (result.reason === 'drained' || (result.reason === 'aborted' && this.g.abortSignal?.aborted))) {
      // The leg was told to stop, not the task: it goes on in a later leg.
      this.interrupted = { name: 'AbortError', code: 'internal', message: `The swarm leg was ${result.reason === 'drained' ? 'drained' : 'aborted'}.` };
      return;
    }
    this.results.set(taskId, result);
    const outcome = outcomeOf(result);
    const endData: JsonValue | undefined = result.status === 'failed' ? { code: result.error.code, message: result.error.message }
      : result.status === 'stopped' ? { reason: result.reason } : undefined;
    await this.step({ type: 'TASK_ENDED', taskId, outcome }, outcome === 'budget-exhausted' ? [{ type: 'budget-exhausted', taskId }] : [], endData);
  }

  private async spawn(item: Extract<Item, { kind: 'spawn' }>): Promise<void> {
    if (this.interrupted) return item.reject(new CairnError('persistence_failed', 'The swarm stopped before the spawn was saved.', { fault: 'dependency' }));
    let checked;
    try {
      checked = checkSpawn(this.g, this.context, item.taskId, item.request, item.key);
    } catch (error) {
      return item.reject(error);
    }
    if (checked.applied) return item.resolve({ taskId: checked.taskId });
    const saved = await this.step(checked.event, [{ type: 'spawned', taskId: checked.taskId, data: checked.data }]);
    if (saved) item.resolve({ taskId: checked.taskId });
    else item.reject(new CairnError('persistence_failed', `The spawn of ${checked.taskId} could not be saved.`, { fault: 'dependency' }));
  }

  private async finish(): Promise<SwarmResult> {
    // Every run this leg started comes to rest before the leg answers: no executor is left behind.
    await Promise.allSettled([...this.inFlight.values()]);
    this.inFlight.clear();
    for (const item of this.queue.splice(0)) if (item.kind === 'spawn') item.reject(new CairnError('persistence_failed', 'The swarm leg stopped.', { fault: 'dependency' }));
    const snapshot = this.actor.getSnapshot();
    const tasks: Record<string, SwarmTaskResult> = {};
    for (const id of snapshot.context.order) {
      const t = snapshot.context.tasks[id]!;
      const runId = taskRunId(this.g.swarmId, id);
      let result = this.results.get(id);
      if (!result && isTaskEnded(t.status) && t.status !== 'skipped') {
        result = (await this.g.store.runs.load(runId, { scope: this.g.scope }).catch(() => undefined))?.result as AgentResult<unknown> | undefined;
      }
      tasks[id] = { taskId: id, status: t.status, runId, ...(result ? { result } : {}), ...(t.spawn ? { spawnedBy: t.spawn.by } : {}) };
    }
    const ex = this.g.execution;
    const accounting = totalsOf(await ex.ledger.entries(ex.path), ex.path);
    const status: SwarmResult['status'] = this.interrupted || (snapshot.status !== 'done' && snapshot.value !== 'waiting')
      ? 'interrupted'
      : snapshot.value === 'waiting' ? 'waiting' : snapshot.value === 'completed' ? 'completed' : 'failed';
    return {
      swarmId: this.g.swarmId, status, tasks, accounting,
      ...(this.interrupted ? { error: this.interrupted } : status === 'interrupted' ? { error: { name: 'AbortError', code: 'internal', message: 'The swarm leg was aborted.' } } : {}),
    };
  }
}

function outcomeOf(result: AgentResult<unknown>): SwarmTaskOutcome {
  if (result.status === 'stopped' && result.reason === 'budget-exceeded') return 'budget-exhausted';
  if (result.status === 'failed' && result.error.code === 'budget_exceeded') return 'budget-exhausted';
  return result.status;
}

function failure(runId: string, error: unknown): AgentResult<unknown> {
  return { status: 'failed', error: serializeError(error), runId, messages: [], usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 }, steps: 0, text: '', warnings: [] } as unknown as AgentResult<unknown>;
}

function budgetRefusal(runId: string): AgentResult<unknown> {
  return failure(runId, new CairnError('budget_exceeded', 'The swarm\'s budget was spent before this task started.', { fault: 'user' }));
}
