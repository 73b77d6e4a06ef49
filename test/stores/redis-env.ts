/**
 * Redis for the test suites. `CAIRN_TEST_REDIS_URL` says where (default
 * `redis://127.0.0.1:6379`). A suite registered with `describeRedis` runs when
 * that server answers; when it does not, the suite is skipped with a warning,
 * except on CI (`CI=true`), where it fails and says why.
 *
 * Each case works under a key prefix of its own (random, handed out by
 * `newPrefix`), and every key under a prefix handed out is deleted after the
 * suite, so test files running in parallel on one server never meet.
 */
import { randomBytes } from 'node:crypto';
import { createClient } from 'redis';
import { afterAll, describe, it } from 'vitest';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export function redisUrl(): string {
  return process.env.CAIRN_TEST_REDIS_URL || DEFAULT_REDIS_URL;
}

/** A client that gives up at once when the server does not answer (no reconnect loop). */
export function rawClient(url = redisUrl()) {
  const client = createClient({ url, socket: { connectTimeout: 3_000, reconnectStrategy: false } });
  client.on('error', () => undefined);
  return client;
}

async function probe(url: string): Promise<string | null> {
  const client = rawClient(url);
  try {
    await client.connect();
    await client.ping();
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    if (client.isOpen) await client.close().catch(() => undefined);
  }
}

// Once per test file that imports this module.
const unreachable = await probe(redisUrl());

export interface RedisTestEnv {
  url: string;
  /** A key prefix no other case uses; every key under it is deleted after the suite. */
  newPrefix(): string;
  /** Runs one command on a short-lived client, outside any store. */
  command(args: string[]): Promise<unknown>;
  /** Every key under `prefix`. */
  keysUnder(prefix: string): Promise<string[]>;
}

async function keysUnder(url: string, prefix: string): Promise<string[]> {
  const client = rawClient(url);
  await client.connect();
  try {
    const found: string[] = [];
    for await (const batch of client.scanIterator({ MATCH: `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`, COUNT: 1000 })) found.push(...batch);
    return found;
  } finally {
    await client.close().catch(() => undefined);
  }
}

/**
 * `describe` for suites that need Redis: runs `fn` with a {@link RedisTestEnv}
 * when the server answers; otherwise skips with a warning, or, on CI,
 * registers a test that fails and says why.
 */
export function describeRedis(name: string, fn: (env: RedisTestEnv) => void): void {
  const url = redisUrl();
  if (unreachable !== null) {
    const why = `Redis at ${url} is not reachable (${unreachable}). Start redis-server or set CAIRN_TEST_REDIS_URL.`;
    if (process.env.CI === 'true') {
      describe(name, () => {
        it('needs Redis', () => {
          throw new Error(`${why} On CI these suites must run, so this fails.`);
        });
      });
      return;
    }
    console.warn(`[cairn tests] skipping "${name}": ${why}`);
    describe.skip(name, () => fn({ url, newPrefix: () => '', command: async () => null, keysUnder: async () => [] }));
    return;
  }
  describe(name, () => {
    const prefixes: string[] = [];
    const env: RedisTestEnv = {
      url,
      newPrefix() {
        const prefix = `cairn-test:${randomBytes(6).toString('hex')}:`;
        prefixes.push(prefix);
        return prefix;
      },
      async command(args) {
        const client = rawClient(url);
        await client.connect();
        try {
          return await client.sendCommand(args);
        } finally {
          await client.close().catch(() => undefined);
        }
      },
      keysUnder: (prefix) => keysUnder(url, prefix),
    };
    afterAll(async () => {
      for (const prefix of prefixes.splice(0)) {
        const found = await keysUnder(url, prefix);
        for (let i = 0; i < found.length; i += 500) await env.command(['DEL', ...found.slice(i, i + 500)]);
      }
    });
    fn(env);
  });
}
