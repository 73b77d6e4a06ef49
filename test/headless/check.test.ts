/**
 * checkStoredRuns against a SQLite store holding the compatibility corpus
 * (records of every machine version so far), a run bound to a different tool
 * schema, a record of a future machine, one whose transcript was edited and a corrupt record: the right runs
 * are reported, and nothing is written (the file's bytes are unchanged).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAgent, type AgentRunEnvelope } from 'cairn/agent';
import { checkStoredRuns } from 'cairn/headless';
import { createSqliteOpsStore, type SqliteOpsStore } from 'cairn/ops/sqlite';
import { corpusAgent, corpusModel, corpusTools, createEffects } from '../compat/corpus-agent.js';

const CORPUS = fileURLToPath(new URL('../compat/corpus/', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'cairn-check-'));
const path = join(dir, 'runs.sqlite');
let ops: SqliteOpsStore;
const expected = new Map<string, string>();

const hash = () => createHash('sha256').update(readFileSync(path)).update(existsSync(`${path}-wal`) ? readFileSync(`${path}-wal`) : '').digest('hex');

async function put(envelope: AgentRunEnvelope) {
  for (let revision = 1; revision <= envelope.revision; revision++) await ops.agentRuns.save({ ...envelope, revision });
}

beforeAll(async () => {
  ops = createSqliteOpsStore({ path });
  for (const version of readdirSync(CORPUS).filter((d) => /^run-v\d+$/.test(d))) {
    for (const file of readdirSync(join(CORPUS, version)).filter((f) => f.endsWith('.json'))) {
      const text = readFileSync(join(CORPUS, version, file), 'utf8');
      const original = (JSON.parse(text) as AgentRunEnvelope).runId;
      // Every version uses the same run ids, so all but the oldest are stored under new ones, renamed wherever the
      // record names the run. (The oldest keeps its own: renamed, its migrated record no longer replays, as an edited one would not.)
      const runId = version === 'run-v1' ? original : `${version}-${file.slice(0, -'.json'.length)}`;
      const envelope = JSON.parse(text.split(`"${original}"`).join(`"${runId}"`)) as AgentRunEnvelope;
      await put(envelope);
      // The completed one has ended: it is not checked.
      if (envelope.status !== 'completed') expected.set(runId, 'resumes');
    }
  }
  // A run bound to an older pay tool, whose amount was a number rather than an integer.
  const older = corpusTools({ effects: createEffects() });
  older.pay = { ...older.pay!, parameters: { type: 'object', properties: { orderId: { type: 'string' }, amountCents: { type: 'number' } }, required: ['orderId', 'amountCents'], additionalProperties: false } };
  const leg = corpusAgent({ effects: createEffects(), runId: 'changed-schema', store: ops.agentRuns, responses: [{ toolCalls: [{ toolName: 'pay', args: { orderId: '7', amountCents: 100 } }] }] });
  const suspended = await runAgent({ ...leg, tools: older });
  expect(suspended.status).toBe('suspended');
  expected.set('changed-schema', 'binding-changed');
  // A record a newer Cairn wrote.
  const future = JSON.parse(readFileSync(join(CORPUS, 'run-v2', 'suspended-approval.json'), 'utf8')) as AgentRunEnvelope;
  await put({ ...future, runId: 'future', machine: { ...future.machine, version: 999 } });
  expected.set('future', 'version-unknown');
  // A record whose transcript was edited: it reads, but its history does not replay to its snapshot.
  const edited = JSON.parse(readFileSync(join(CORPUS, 'run-v2', 'suspended-approval.json'), 'utf8')) as AgentRunEnvelope;
  const messages = (edited.snapshot as { context: { messages: { role: string; content: unknown }[] } }).context.messages;
  const tool = messages.findIndex((m) => m.role === 'tool');
  messages[tool] = { ...messages[tool]!, content: 'edited by hand' };
  await put({ ...edited, runId: 'edited' });
  expected.set('edited', 'replay-diverged');
  // A record whose head bytes were damaged on disk.
  await put({ ...future, runId: 'damaged' });
  const db = new Database(path);
  db.prepare("UPDATE cairn_runs SET head = x'00ff00ff' WHERE run_id = 'damaged'").run();
  db.close();
  expected.set('damaged', 'record-corrupt');
});

afterAll(() => {
  ops.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('checkStoredRuns', () => {
  it('says which runs would resume under the new tools and model, and why the others would not', async () => {
    const before = hash();
    const checks = await checkStoredRuns(ops.agentRuns, { agent: { tools: corpusTools({ effects: createEffects() }), model: corpusModel([]) } });
    expect(hash()).toBe(before);
    const verdicts = new Map(checks.map((c) => [c.runId, c.resumes ? 'resumes' : c.problem]));
    expect(Object.fromEntries(verdicts)).toEqual(Object.fromEntries(expected));
    const changed = checks.find((c) => c.runId === 'changed-schema')!;
    expect(changed.details).toEqual(['tool pay: its parameters schema']);
    expect(changed.error).toMatchObject({ name: 'BindingChangedError', code: 'binding_changed' });
    expect(checks.find((c) => c.runId === 'future')!.error!.code).toBe('checkpoint_version_unsupported');
    expect(checks.find((c) => c.runId === 'damaged')!.error!.code).toBe('record_corrupt');
    // The older records resume after their migration; their states are the migrated ones.
    const v1 = checks.find((c) => c.runId === 'corpus-suspended-approval')!;
    expect(v1).toMatchObject({ resumes: true, storedVersion: 1, states: ['suspending'] });
  });

  it('reports a changed model, and compares only the parts it is given', async () => {
    const checks = await checkStoredRuns(ops.agentRuns, { agent: { model: { ...corpusModel([]), modelId: 'corpus-model-2' } } });
    const bound = checks.filter((c) => c.problem === 'binding-changed');
    // Every run that reads and replays is bound to the old model.
    expect(bound.length).toBe([...expected.values()].filter((v) => v === 'resumes' || v === 'binding-changed').length);
    for (const c of bound) expect(c.details).toEqual(['the model']);
    // With nothing to compare, only the records are checked: the old tool schema passes.
    const recordsOnly = await checkStoredRuns(ops.agentRuns);
    expect(recordsOnly.find((c) => c.runId === 'changed-schema')!.resumes).toBe(true);
    expect(recordsOnly.filter((c) => !c.resumes).map((c) => c.runId).sort()).toEqual(['damaged', 'edited', 'future']);
    expect(recordsOnly.find((c) => c.runId === 'edited')!.details[0]).toMatch(/messages\[\d+\]\.content/);
  });

  it('refuses what is not a store', async () => {
    await expect(checkStoredRuns(null as never)).rejects.toMatchObject({ code: 'invalid_options' });
  });
});
