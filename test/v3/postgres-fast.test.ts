/**
 * The one-statement save of the PostgreSQL V3 store (src/v3/postgres-fast.ts):
 * a step that only adds rows is one statement on the wire, and the checks the
 * locked save makes still hold on it (another writer in between, a lost lease).
 */
import assert from 'node:assert/strict';
import pg from 'pg';
import { expect, it } from 'vitest';
import { createPostgresAgentRunStoreV3, createPostgresOpsStore } from 'cairn/ops/postgres';
import { v3TestBlob, v3TestEnvelope } from '../../src/testing/v3-store-suite.js';
import { describePostgres } from '../stores/pg-env.js';

const withSteps = (n: number, digest: string) => ({
  context: { steps: Array.from({ length: n }, (_, step) => ({ step, phase: 'loop' as const, blob: { digest }, manifest: { step } })), compiler: { pass: n } },
});

describePostgres('postgres V3 store: one statement per step', (env) => {
  /** A pool whose clients count the statements sent. */
  const countingPool = () => {
    const pool = new pg.Pool({ connectionString: env.url });
    const sent: string[] = [];
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const first = args[0] as string | { text: string };
        sent.push(typeof first === 'string' ? first : first.text);
        return query(...args);
      };
    });
    return { pool, sent };
  };

  it('saves a step that only adds rows in one statement, no BEGIN, and loads it back', async () => {
    const schema = env.newSchema();
    const { pool, sent } = countingPool();
    const store = createPostgresAgentRunStoreV3({ pool }, { schema });
    try {
      await store.setup();
      const blob = v3TestBlob('a');
      await store.save(v3TestEnvelope('r-1', 1, withSteps(1, blob.digest)), { blobs: [blob] });
      for (let revision = 2; revision <= 5; revision++) {
        sent.length = 0;
        await store.save(v3TestEnvelope('r-1', revision, withSteps(revision, blob.digest)), { blobs: [blob] });
        expect(sent.length).toBe(1);
        expect(sent[0]).not.toMatch(/^BEGIN/);
      }
      const loaded = (await store.load('r-1'))!;
      expect(loaded.revision).toBe(5);
      expect(loaded.context!.steps.map((s) => s.step)).toEqual([0, 1, 2, 3, 4]);
    } finally {
      await store.close();
      await pool.end();
    }
  });

  it('a save after another store object wrote the run is a revision conflict, and writes nothing', async () => {
    const schema = env.newSchema();
    const a = createPostgresAgentRunStoreV3({ connectionString: env.url }, { schema });
    const b = createPostgresAgentRunStoreV3({ connectionString: env.url }, { schema });
    try {
      await a.setup();
      await a.save(v3TestEnvelope('r-1', 1));
      await a.save(v3TestEnvelope('r-1', 2));
      await b.load('r-1');
      await b.save(v3TestEnvelope('r-1', 3, { snapshot: { value: 'by-b', context: {} } }));
      await assert.rejects(a.save(v3TestEnvelope('r-1', 3)), (e: { code?: string }) => e.code === 'revision_conflict');
      expect(((await a.load('r-1'))!.snapshot as { value: string }).value).toBe('by-b');
      // b's next save goes on (its own rows), and a, once it loaded, too.
      await b.save(v3TestEnvelope('r-1', 4));
      await a.load('r-1');
      await a.save(v3TestEnvelope('r-1', 5));
      expect((await b.load('r-1'))!.revision).toBe(5);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a step saved under a lease that was lost is refused with lease_lost, and writes nothing', async () => {
    const schema = env.newSchema();
    const ops = createPostgresOpsStore({ connectionString: env.url }, { schema });
    const store = createPostgresAgentRunStoreV3({ connectionString: env.url }, { schema });
    try {
      await ops.setup();
      await store.setup();
      const lease = (await ops.leases.acquire('run:r-1', 'w-1', 60_000))!;
      await store.save(v3TestEnvelope('r-1', 1), { lease });
      await store.save(v3TestEnvelope('r-1', 2), { lease });
      await ops.leases.release(lease);
      await assert.rejects(store.save(v3TestEnvelope('r-1', 3), { lease }), (e: { code?: string }) => e.code === 'lease_lost');
      expect((await store.load('r-1'))!.revision).toBe(2);
    } finally {
      await store.close();
      await ops.close();
    }
  });
});
