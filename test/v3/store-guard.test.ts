/**
 * assertAgentRunStoreV3, the check a checkpointVersion 3 run makes on its store before
 * anything is read or written: the three V3 stores pass; the Redis run store is refused as
 * Redis, any other run store as a store without V3 records, both with UnsupportedStoreError.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  assertAgentRunStoreV3, createInMemoryAgentRunStore, createInMemoryAgentRunStoreV3, isAgentRunStoreV3, UnsupportedStoreError,
} from 'cairn/agent';
import { createPostgresAgentRunStoreV3 } from 'cairn/ops/postgres';
import { createRedisOpsStore } from 'cairn/ops/redis';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore } from 'cairn/ops/sqlite';

const refusal = (store: unknown) => {
  try {
    assertAgentRunStoreV3(store);
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('assertAgentRunStoreV3', () => {
  it('passes the in-memory, SQLite and PostgreSQL V3 stores (the last without connecting)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-v3-guard-'));
    const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
    const pg = createPostgresAgentRunStoreV3({ connectionString: 'postgres://127.0.0.1:1/none' });
    for (const store of [createInMemoryAgentRunStoreV3(), createSqliteAgentRunStoreV3(ops), pg]) {
      expect(isAgentRunStoreV3(store)).toBe(true);
      expect(refusal(store)).toBeUndefined();
    }
    await pg.close();
    ops.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses the Redis run store as Redis (backend redis, feature agent-run-v3), without connecting', async () => {
    const redis = createRedisOpsStore({ url: 'redis://127.0.0.1:1' });
    const error = refusal(redis.agentRuns);
    expect(UnsupportedStoreError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'unsupported_store', backend: 'redis', feature: 'agent-run-v3', fault: 'user' });
    expect(isAgentRunStoreV3(redis.agentRuns)).toBe(false);
    await redis.close();
  });

  it('refuses any other run store, and things that are no store', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-v3-guard-'));
    const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
    for (const store of [createInMemoryAgentRunStore(), ops.agentRuns, null, undefined, {}, { checkpointVersion: 3 }]) {
      expect(refusal(store)).toMatchObject({ name: 'UnsupportedStoreError', code: 'unsupported_store', feature: 'agent-run-v3', backend: 'agent-run-store' });
    }
    ops.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
