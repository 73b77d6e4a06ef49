/**
 * What the store asks of the server before its first command, once per store
 * object: Redis 7 or later (the write scripts declare flags, so a server out
 * of memory refuses a save before it writes anything), a memory policy that
 * never evicts the store's keys, and the data set loaded (after a restart
 * Redis answers LOADING until it has read its append-only file).
 */
import type { createClient } from 'redis';
import { UnsupportedStoreError } from '../../errors/index.js';

type Client = ReturnType<typeof createClient>;

/** The `field:value` lines of an INFO reply. */
export function infoFields(reply: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of reply.split(/\r?\n/)) {
    const at = line.indexOf(':');
    if (at > 0 && !line.startsWith('#')) fields.set(line.slice(0, at), line.slice(at + 1).trim());
  }
  return fields;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function checkServer(client: Client, shown: string, deadline: number): Promise<void> {
  for (;;) {
    const info = infoFields(String(await client.sendCommand(['INFO', 'server', 'memory', 'persistence'])));
    const version = info.get('redis_version') ?? '';
    const major = Number(version.split('.')[0]);
    // A server that does not say (a proxy, a fork) is taken at its word: the scripts fail clearly if it is older.
    if (version !== '' && Number.isFinite(major) && major < 7) {
      throw new UnsupportedStoreError('redis', 'server-version',
        `Redis at ${shown} is version ${version}; the Redis store needs Redis 7 or later (nothing was written).`);
    }
    const policy = info.get('maxmemory_policy') ?? 'noeviction';
    if (policy.startsWith('allkeys-')) {
      throw new UnsupportedStoreError('redis', 'maxmemory-policy',
        `Redis at ${shown} has maxmemory-policy ${policy}: it may evict run records and receipts. Set maxmemory-policy noeviction (or a volatile-* policy) for the Redis store; nothing was written.`);
    }
    if (info.get('loading') !== '1' || Date.now() >= deadline) return;
    await sleep(50);
  }
}
