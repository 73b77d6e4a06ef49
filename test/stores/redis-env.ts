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
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

/** A redis-server of the test's own, in a temporary directory, that it can kill and start again on the same data. */
export interface OwnRedis {
  url: string;
  dir: string;
  /** SIGKILLs the server (no shutdown, no final write) and waits for it to be gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory, and waits for it to answer. */
  start(): Promise<void>;
  /** Stops it and removes the directory. */
  destroy(): Promise<void>;
}

/** Whether redis-server can be run here: null, or why not. */
export function redisServerMissing(): string | null {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  return probe.error ? `redis-server is not installed (${probe.error.message}); .ci/run installs it with apt-get` : null;
}

/**
 * `describe` for suites that start their own redis-server: skipped with a
 * warning where it is not installed, except on CI, where that fails.
 */
export function describeOwnRedis(name: string, fn: () => void): void {
  const missing = redisServerMissing();
  if (missing === null) {
    describe(name, fn);
  } else if (process.env.CI === 'true') {
    describe(name, () => {
      it('needs redis-server', () => {
        throw new Error(`${missing}. On CI these suites must run, so this fails.`);
      });
    });
  } else {
    console.warn(`[cairn tests] skipping "${name}": ${missing}`);
    describe.skip(name, fn);
  }
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Starts a redis-server on a free port of 127.0.0.1 in a new temporary
 * directory, with `args` after the defaults (`--appendonly yes --appendfsync
 * always`, no RDB snapshots), and waits until it answers.
 */
export async function startOwnRedis(args: string[] = []): Promise<OwnRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'cairn-redis-'));
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  const start = async () => {
    const proc = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--daemonize', 'no',
      '--appendonly', 'yes', '--appendfsync', 'always', '--logfile', join(dir, 'redis.log'), ...args,
    ], { stdio: 'ignore' });
    child = proc;
    const exited = new Promise<never>((_, reject) => proc.once('exit', (code) => reject(new Error(`redis-server exited (${code}); see ${join(dir, 'redis.log')}`))));
    exited.catch(() => undefined);
    for (let i = 0; ; i++) {
      const client = rawClient(url);
      try {
        await Promise.race([client.connect(), exited]);
        const info = String(await client.sendCommand(['INFO', 'persistence']));
        if (/loading:0/.test(info)) return;
      } catch (error) {
        if (i > 200) throw error;
      } finally {
        if (client.isOpen) await client.close().catch(() => undefined);
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };
  const kill = async () => {
    const proc = child;
    child = null;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGKILL');
    await gone;
  };
  await start();
  return {
    url, dir, kill, start,
    async destroy() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
