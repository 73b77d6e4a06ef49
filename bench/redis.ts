/**
 * `npm run bench -- --redis`: a durable step on the Redis store against raw
 * Redis round trips timed in the same run. The workload is the durable
 * sections' 100-step tool loop (one tool call a step, bench/tool-loop.ts); a
 * step makes two saves, each one script round trip. Beside it, after each
 * timed loop: raw SET + GET pairs of a 2 KB value (two plain round trips),
 * and pairs of EVALSHA of a script that writes about what a save does (a
 * 2 KB list push and a hash field). Both on the shared server as it is
 * configured, and on a redis-server the bench starts with `--appendonly yes
 * --appendfsync always` (the setting docs/redis.md recommends), when
 * redis-server is installed. Numbers, not assertions.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { createRedisOpsStore } from 'cairn/ops/redis';
import { toolLoop } from './tool-loop.js';

const STEPS = 100;
const WARMUP_LOOPS = 5;
const TIMED_LOOPS = 5;
/** Raw pairs timed after each timed loop: a loop's worth (a step makes two saves). */
const RAW_PAIRS = STEPS;

/** Writes about what a save writes: a part appended to a list, a head field set, a revision read first. */
const RAW_SCRIPT = `#!lua
local rev = tonumber(redis.call('HGET', KEYS[1], 'revision') or '0')
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[1], 'revision', rev + 1, 'head', ARGV[1])
return rev + 1`;
const RAW_SHA = createHash('sha1').update(RAW_SCRIPT).digest('hex');

export interface RedisRow {
  server: string;
  persistence: string;
  msPerStep: number;
  savesPerStep: number;
  /** ms of one SET + GET pair, and of two EVALSHA of the raw script: medians of the blocks. */
  setGetMs: number;
  evalPairMs: number;
  /** Each timed loop's ms per step over the raw pair timed right after it; the median. */
  perStepVsSetGet: number;
  perStepVsEval: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function measureOn(url: string, server: string): Promise<RedisRow> {
  const raw = createClient({ url, socket: { reconnectStrategy: false } });
  raw.on('error', () => undefined);
  await raw.connect();
  const prefix = `cairn-bench:${process.pid}:${Date.now()}:`;
  const config = await raw.sendCommand(['CONFIG', 'GET', 'append*']) as string[];
  const setting = new Map<string, string>();
  for (let i = 0; i < config.length; i += 2) setting.set(config[i]!, config[i + 1]!);
  const persistence = setting.get('appendonly') === 'yes' ? `appendonly yes, appendfsync ${setting.get('appendfsync')}` : 'appendonly no';
  const ops = createRedisOpsStore({ url, keyPrefix: prefix });
  let saves = 0;
  const store = {
    load: ops.agentRuns.load,
    save: (envelope: Parameters<typeof ops.agentRuns.save>[0], options?: Parameters<typeof ops.agentRuns.save>[1]) => {
      saves++;
      return ops.agentRuns.save(envelope, options);
    },
  };
  const body = randomBytes(2048);
  const pairs = async (n: number, kind: 'set-get' | 'eval') => {
    const started = performance.now();
    for (let i = 0; i < n; i++) {
      body.writeUInt32LE(i, 0);
      if (kind === 'set-get') {
        await raw.sendCommand(['SET', `${prefix}raw`, body]);
        await raw.sendCommand(['GET', `${prefix}raw`]);
      } else {
        for (let j = 0; j < 2; j++) await raw.sendCommand(['EVALSHA', RAW_SHA, '2', `${prefix}raw:h`, `${prefix}raw:l:${i % 50}`, body]);
      }
    }
    return (performance.now() - started) / n;
  };
  try {
    await raw.sendCommand(['SCRIPT', 'LOAD', RAW_SCRIPT]);
    await pairs(200, 'set-get');
    await pairs(200, 'eval');
    for (let i = 0; i < WARMUP_LOOPS; i++) await toolLoop(ops.agentRuns, `warmup-${i}`, STEPS, 'bare');
    const loops: number[] = [];
    const setGet: number[] = [];
    const evals: number[] = [];
    saves = 0;
    for (let i = 0; i < TIMED_LOOPS; i++) {
      const started = performance.now();
      const result = await toolLoop(store, `timed-${i}`, STEPS, 'bare');
      loops.push((performance.now() - started) / STEPS);
      if (result.status !== 'completed') throw new Error(`the loop ended ${result.status}`);
      setGet.push(await pairs(RAW_PAIRS, 'set-get'));
      evals.push(await pairs(RAW_PAIRS, 'eval'));
      // Each raw list grows by two parts a pair: cleared so later blocks push onto lists of the same length.
      await raw.sendCommand(['DEL', ...Array.from({ length: 50 }, (_, k) => `${prefix}raw:l:${k}`)]);
    }
    return {
      server,
      persistence,
      msPerStep: median(loops),
      savesPerStep: saves / TIMED_LOOPS / STEPS,
      setGetMs: median(setGet),
      evalPairMs: median(evals),
      perStepVsSetGet: median(loops.map((ms, i) => ms / setGet[i]!)),
      perStepVsEval: median(loops.map((ms, i) => ms / evals[i]!)),
    };
  } finally {
    await ops.close();
    const keys: string[] = [];
    for await (const batch of raw.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) keys.push(...batch);
    for (let i = 0; i < keys.length; i += 500) await raw.sendCommand(['DEL', ...keys.slice(i, i + 500)]);
    await raw.close();
  }
}

/** A redis-server of the bench's own with the append-only file fsynced on every write; null where none is installed. */
async function ownServer(): Promise<{ url: string; stop(): Promise<void> } | null> {
  if (spawnSync('redis-server', ['--version']).error) return null;
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-redis-'));
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
    '--appendonly', 'yes', '--appendfsync', 'always'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const client = createClient({ url, socket: { reconnectStrategy: false } });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.close();
      break;
    } catch (error) {
      if (i > 200) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
  return {
    url,
    async stop() {
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await gone;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function measureRedis(): Promise<RedisRow[]> {
  const rows: RedisRow[] = [];
  const url = process.env.CAIRN_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  try {
    rows.push(await measureOn(url, url));
  } catch (error) {
    console.log(`redis at ${url}: skipped (${(error as Error).message})`);
  }
  const own = await ownServer();
  if (!own) {
    console.log('own redis-server (appendfsync always): skipped, redis-server is not installed');
    return rows;
  }
  try {
    rows.push(await measureOn(own.url, 'own redis-server'));
  } finally {
    await own.stop();
  }
  return rows;
}

export function printRedis(rows: RedisRow[]): void {
  const f = (n: number, d = 3) => n.toFixed(d);
  console.log(`\nRedis store: a durable one-tool step (${STEPS}-step tool loop, median of ${TIMED_LOOPS} loops after ${WARMUP_LOOPS} untimed) against raw round trips timed right after each loop (${RAW_PAIRS} pairs a block): a SET + GET of 2 KB, and two EVALSHA of a script writing a 2 KB list part and a hash field\n`);
  console.log('| server | persistence | ms per step | saves per step | SET + GET ms | 2 x EVALSHA ms | step / (SET + GET) | step / (2 x EVALSHA) |');
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    console.log(`| ${r.server} | ${r.persistence} | ${f(r.msPerStep)} | ${f(r.savesPerStep, 2)} | ${f(r.setGetMs)} | ${f(r.evalPairMs)} | ${f(r.perStepVsSetGet, 2)}x | ${f(r.perStepVsEval, 2)}x |`);
  }
}
