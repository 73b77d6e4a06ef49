/**
 * The V3 store's compatibility fixture (test/compat/corpus/v3-store/, written once by
 * store-corpus-generate.ts and never edited): a V3 run suspended at its payment's approval,
 * put back into a fresh V3 store in memory and on SQLite with its packages, resumed with
 * checkpointVersion 3 to its end (the payment runs once, no package stored twice), and refused
 * when its version is one this reader does not know or its scope is another.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStoreV3, resumeAgent, type AgentRunEnvelopeV3, type AgentRunStoreV3, type ContextBlobContent,
} from 'cairn/agent';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore, type SqliteOpsStore } from 'cairn/ops/sqlite';
import { createEffects } from '../compat/corpus-agent.js';
import { DONE, V3_CORPUS_RUN_ID, v3CorpusAgent } from './store-corpus-agent.js';

const dir = new URL('../compat/corpus/v3-store/', import.meta.url);
const record = JSON.parse(readFileSync(new URL('suspended-approval.json', dir), 'utf8')) as AgentRunEnvelopeV3;
const blobs = JSON.parse(readFileSync(new URL('suspended-approval.blobs.json', dir), 'utf8')) as Record<string, ContextBlobContent>;

const opened: SqliteOpsStore[] = [];
const tmp: string[] = [];
afterAll(() => {
  for (const ops of opened) ops.close();
  for (const d of tmp) rmSync(d, { recursive: true, force: true });
});

const kinds: { name: string; open(): AgentRunStoreV3 }[] = [
  { name: 'in-memory', open: () => createInMemoryAgentRunStoreV3() },
  {
    name: 'sqlite',
    open() {
      const d = mkdtempSync(join(tmpdir(), 'cairn-v3-corpus-'));
      tmp.push(d);
      const ops = createSqliteOpsStore({ path: join(d, 'runs.sqlite') });
      opened.push(ops);
      return createSqliteAgentRunStoreV3(ops);
    },
  },
];

/** The fixture in a fresh store: saved at each revision up to its own, its packages with the first save. */
async function seeded(open: () => AgentRunStoreV3, fixture: AgentRunEnvelopeV3 = record) {
  const store = open();
  const packages = Object.entries(blobs).map(([digest, content]) => ({ digest, content }));
  for (let revision = 1; revision <= fixture.revision; revision++) {
    await store.save({ ...structuredClone(fixture), revision }, revision === 1 ? { blobs: packages } : {});
  }
  return store;
}

describe('the V3 store fixture', () => {
  it('is a version 3 record suspended at an approval, whose packages hash to their digests', () => {
    expect(record).toMatchObject({ kind: 'cairn-agent-run', version: 3, status: 'suspended', runId: V3_CORPUS_RUN_ID });
    expect(record.pendingApprovals).toHaveLength(1);
    expect(record.context!.steps.length).toBeGreaterThan(0);
    expect(Object.keys(blobs).sort()).toEqual([...new Set(record.context!.steps.map((s) => s.blob.digest))].sort());
  });

  for (const kind of kinds) {
    it(`${kind.name}: resumes with checkpointVersion 3 to its end, the payment once, and stays a version 3 record`, async () => {
      const store = await seeded(kind.open);
      const effects = createEffects();
      const approval = record.pendingApprovals[0]!;
      const options = v3CorpusAgent({ store, effects, responses: [DONE], idPrefix: 'resume' });
      const result = await resumeAgent({ ...options, approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }] } as never);
      expect(result.status, JSON.stringify(result.status === 'failed' ? result.error : result.status)).toBe('completed');
      expect(effects.byTool.pay).toBe(1);
      expect(effects.byTool.lookup).toBe(0);
      expect(options.model.calls).toHaveLength(1);
      const after = (await store.load(V3_CORPUS_RUN_ID))!;
      expect(after).toMatchObject({ version: 3, status: 'completed' });
      expect(after.revision).toBeGreaterThan(record.revision);
      for (const step of after.context!.steps) expect((await store.getBlob(step.blob.digest)).status).toBe('found');
    });

    it(`${kind.name}: the same record of a future version (4) is refused on save, and of another scope on load`, async () => {
      const store = await seeded(kind.open);
      await expect(store.save({ ...structuredClone(record), version: 4 } as never)).rejects.toMatchObject({ code: 'checkpoint_version_unsupported' });
      await expect(store.load(V3_CORPUS_RUN_ID, { scope: 'tenant-other' })).rejects.toMatchObject({ code: 'scope_mismatch' });
      const effects = createEffects();
      const options = v3CorpusAgent({ store, effects, responses: [DONE] });
      const other = await resumeAgent({ ...options, session: { ...options.session, scope: 'tenant-other' } } as never);
      expect(other).toMatchObject({ status: 'failed', error: { code: 'scope_mismatch' } });
      expect(options.model.calls).toHaveLength(0);
      expect(effects.log).toEqual([]);
    });
  }
});
