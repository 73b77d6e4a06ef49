/**
 * The readers read V3 stores: describeRun describes a V3 record (with its
 * packages, working memory and redactions), inspectRun reports a run of a V3
 * store, checkStoredRuns checks one, and `cairn inspect`, `cairn chart` and
 * `cairn check` find a V3 run in the store file beside the ops runs. Nothing
 * reading writes.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { contextBlobDigest, createInMemoryAgentRunStoreV3, type AgentRunEnvelope, type AgentRunEnvelopeV3 } from 'cairn/agent';
import { checkStoredRuns, inspectRun } from 'cairn/headless';
import { describeRun } from 'cairn/machines';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore } from 'cairn/ops/sqlite';
import { chartCommand } from '../../src/cli/chart-command.js';
import { checkCommand } from '../../src/cli/check-command.js';
import { inspectCommand, runsCommand } from '../../src/cli/read-commands.js';
import type { Io } from '../../src/cli/context.js';

const CORPUS = new URL('../compat/corpus/run-v2/', import.meta.url);
const corpus = (name: string) => JSON.parse(readFileSync(new URL(name, CORPUS), 'utf8')) as AgentRunEnvelope;

const blocks = [{ type: 'retrieval', text: 'Order 7 ships from Lyon.' }];
const digest = contextBlobDigest(blocks);

/** A corpus record as a V3 run would store it: version 3, one compiled package, working memory. */
function v3Record(name: string, scope = 'headless'): AgentRunEnvelopeV3 {
  const record = corpus(name);
  return {
    ...record, version: 3, scope, revision: 1,
    context: { steps: [{ step: 0, phase: 'loop', blob: { digest }, manifest: { refresh: 'initial' } }] },
    workingMemory: { revision: 1, snapshot: { goal: 'Pay for order 7.' } },
  };
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function io(cwd: string) {
  let out = '';
  const value: Io = {
    stdout: { write: (text: string) => (out += text) }, stderr: { write: () => true } as unknown as Io['stderr'],
    stdin: process.stdin, cwd,
  };
  return { io: value, out: () => out };
}

describe('describeRun, inspectRun and checkStoredRuns on V3 records', () => {
  it('describeRun describes the run and its V3 fields', () => {
    const record = v3Record('suspended-approval.json');
    const described = describeRun(record);
    const plain = describeRun(corpus('suspended-approval.json'));
    expect(described.states).toEqual(plain.states);
    expect(described.pendingApprovals).toEqual(plain.pendingApprovals);
    expect(plain.v3).toBeUndefined();
    expect(described.v3).toEqual({
      version: 3, contextSteps: [{ step: 0, phase: 'loop', digest, redacted: false }], packages: [digest],
      workingMemoryRevision: 1, memoryIntents: [], forgotten: [],
    });
    expect(() => describeRun({ ...record, version: 4 } as never)).toThrow(expect.objectContaining({ code: 'checkpoint_version_unsupported' }));
  });

  it('inspectRun reports a V3 store\'s run; another scope is refused', async () => {
    const runs = createInMemoryAgentRunStoreV3();
    const record = v3Record('suspended-approval.json', 'tenant-a');
    await runs.save(record, { blobs: [{ digest, content: { blocks } }] });
    const report = await inspectRun(runs, record.runId, { scope: 'tenant-a' });
    expect(report).toMatchObject({ outcome: 'pending', runId: record.runId });
    expect(report.pending?.map((p) => p.kind)).toEqual(['approval']);
    await expect(inspectRun(runs, record.runId, { scope: 'tenant-b' })).rejects.toMatchObject({ code: 'scope_mismatch' });
  });

  it('checkStoredRuns checks a V3 store\'s unended runs', async () => {
    const runs = createInMemoryAgentRunStoreV3();
    await runs.save(v3Record('suspended-approval.json'), { blobs: [{ digest, content: { blocks } }] });
    await runs.save(v3Record('completed.json'));
    const checks = await checkStoredRuns(runs);
    expect(checks.map((c) => [c.runId, c.resumes])).toEqual([[corpus('suspended-approval.json').runId, true]]);
  });
});

describe('cairn inspect, chart and check on a store file with a V3 run', () => {
  it('find the V3 run beside the ops runs, and leave the file as it was', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'cairn-v3-cli-'));
    dirs.push(cwd);
    const path = join(cwd, 'runs.sqlite');
    const ops = createSqliteOpsStore({ path });
    const runs = createSqliteAgentRunStoreV3(ops);
    const record = { ...v3Record('suspended-approval.json'), runId: 'v3-pay' };
    await runs.save(record, { blobs: [{ digest, content: { blocks } }] });
    const plain = corpus('suspended-client-call.json');
    for (let revision = 1; revision <= plain.revision; revision++) await ops.agentRuns.save({ ...plain, revision });
    ops.close();
    const bytes = readFileSync(path);

    const inspect = io(cwd);
    expect(await inspectCommand(['v3-pay', '--store', 'runs.sqlite', '--json'], inspect.io)).toBe(3);
    expect(JSON.parse(inspect.out())).toMatchObject({ outcome: 'pending', runId: 'v3-pay' });

    const chart = io(cwd);
    expect(await chartCommand(['v3-pay', '--store', 'runs.sqlite', '--format', 'json'], chart.io)).toBe(0);
    const described = JSON.parse(chart.out());
    expect(described.runId).toBe('v3-pay');
    expect(described.v3.packages).toEqual([digest]);
    const html = io(cwd);
    expect(await chartCommand(['v3-pay', '--store', 'runs.sqlite'], html.io)).toBe(0);
    expect(html.out()).toContain('v3-pay');

    const check = io(cwd);
    expect(await checkCommand(['--store', 'runs.sqlite', '--json'], check.io)).toBe(0);
    expect(JSON.parse(check.out()).runs.map((c: { runId: string }) => c.runId).sort()).toEqual([plain.runId, 'v3-pay'].sort());

    // cairn runs lists both, the V3 one marked; --limit cuts the merged list, and says there is more.
    const listed = io(cwd);
    expect(await runsCommand(['--store', 'runs.sqlite', '--json'], listed.io)).toBe(0);
    const page = JSON.parse(listed.out());
    expect(page.runs.map((r: { runId: string }) => r.runId).sort()).toEqual([plain.runId, 'v3-pay'].sort());
    expect(page.runs.find((r: { runId: string }) => r.runId === 'v3-pay')).toMatchObject({ checkpointVersion: 3, status: record.status });
    expect(page.runs.find((r: { runId: string }) => r.runId === plain.runId).checkpointVersion).toBeUndefined();
    expect(page.more).toBeUndefined();
    const one = io(cwd);
    expect(await runsCommand(['--store', 'runs.sqlite', '--limit', '1', '--json'], one.io)).toBe(0);
    expect(JSON.parse(one.out())).toMatchObject({ more: true, runs: [expect.anything()] });
    const text = io(cwd);
    expect(await runsCommand(['--store', 'runs.sqlite'], text.io)).toBe(0);
    expect(text.out()).toMatch(/^v3-pay\s.*\(V3\)$/m);
    const suspendedOnly = io(cwd);
    expect(await runsCommand(['--store', 'runs.sqlite', '--status', 'completed', '--json'], suspendedOnly.io)).toBe(0);
    expect(JSON.parse(suspendedOnly.out()).runs).toEqual([]);

    expect(readFileSync(path).equals(bytes)).toBe(true);
  });
});
