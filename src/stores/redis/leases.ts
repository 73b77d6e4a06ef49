/**
 * The Redis LeaseProvider: one hash per key (owner, token, exp, drain), every
 * time on the server's clock (TIME inside the script), so executors on
 * machines whose clocks differ agree on who holds a run. Each operation is one
 * script, so ten owners racing for a key are decided one after the other.
 *
 * The hash outlives the lease on purpose: a release empties its owner and
 * keeps its token, so the fencing token keeps growing across holders and is
 * never reused, and inspect shows an expired lease as it was stored. A key
 * expiry (PEXPIRE) would forget the token with the holding; instead, when
 * `leaseRetentionMs` is set, an expired or released hash is given a PEXPIRE
 * that long past its expiry, as garbage collection for keys no run uses again.
 */
import { InvalidOptionsError } from '../../errors/index.js';
import type { Lease, LeaseProvider, LeaseRenewal } from '../../agent/types.js';
import { list, num, script, text, type RedisConn, type Reply } from './client.js';
import type { Keys } from './keys.js';
import { NOW_MS } from './run-scripts.js';

/** Sets the key's PEXPIRE to ARGV[n] ms past its expiry, when ARGV[n] is above 0. */
const RETAIN = `local function retain(exp, n)
  local keep = tonumber(ARGV[n])
  if keep > 0 then redis.call('PEXPIREAT', KEYS[1], exp + keep) end
end
`;

/** ARGV: 1 owner, 2 ttl ms, 3 retention. Returns {owner, token, exp, drain} or {} when another owner holds it. */
const ACQUIRE = script('write', `${NOW_MS}${RETAIN}
local now = now_ms()
local l = redis.call('HMGET', KEYS[1], 'owner', 'token', 'exp', 'drain')
local owner, token, exp, drain = l[1] or '', tonumber(l[2] or '0'), tonumber(l[3] or '0'), l[4] or '0'
local live = owner ~= '' and exp > now
if live and owner ~= ARGV[1] then return {} end
if not live then
  token = token + 1
  drain = '0'
end
local until_ms = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', token, 'exp', until_ms, 'drain', drain)
redis.call('PERSIST', KEYS[1])
retain(until_ms, 3)
return {ARGV[1], token, until_ms, drain}
`);

/** ARGV: 1 owner, 2 token, 3 ttl ms, 4 retention. Returns {owner, token, exp, drain} or {} when the lease is lost. */
const RENEW = script('write', `${NOW_MS}${RETAIN}
local now = now_ms()
local l = redis.call('HMGET', KEYS[1], 'owner', 'token', 'exp', 'drain')
if l[1] ~= ARGV[1] or l[2] ~= ARGV[2] or not l[3] or tonumber(l[3]) <= now then return {} end
local until_ms = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'exp', until_ms)
retain(until_ms, 4)
return {l[1], tonumber(l[2]), until_ms, l[4] or '0'}
`);

/** ARGV: 1 owner, 2 token, 3 retention. */
const RELEASE = script('write', `${NOW_MS}${RETAIN}
local now = now_ms()
local l = redis.call('HMGET', KEYS[1], 'owner', 'token', 'exp')
if l[1] ~= ARGV[1] or l[2] ~= ARGV[2] or not l[3] or tonumber(l[3]) <= now then return 0 end
local exp = math.min(tonumber(l[3]), now)
redis.call('HSET', KEYS[1], 'owner', '', 'exp', exp, 'drain', '0')
retain(exp, 3)
return 1
`);

const DRAIN = script('write', `${NOW_MS}
local l = redis.call('HMGET', KEYS[1], 'owner', 'exp')
if l[1] and l[1] ~= '' and tonumber(l[2]) > now_ms() then redis.call('HSET', KEYS[1], 'drain', '1') end
return 0
`);

const toLease = (key: string, reply: Reply[]): Lease => ({ key, owner: text(reply[0])!, token: num(reply[1])!, expiresAt: num(reply[2])! });

/** @internal Takes the store's connection, whose driver types stay out of the published declarations (redis is an optional peer). */
export function createRedisLeaseProvider(conn: RedisConn, k: Keys, retentionMs: number): LeaseProvider {
  return {
    async acquire(key, owner, ttlMs) {
      checkKey(key, 'key');
      checkKey(owner, 'owner');
      checkTtl(ttlMs);
      const reply = list(await conn.eval(`Acquiring lease ${key}`, ACQUIRE, [k.lease(key)], [owner, Math.ceil(ttlMs), retentionMs]));
      return reply.length === 0 ? null : toLease(key, reply);
    },

    async renew(lease, ttlMs): Promise<LeaseRenewal | null> {
      checkTtl(ttlMs);
      // A lease that lapsed is lost even if nobody took it: a save with it was already refused.
      const reply = list(await conn.eval(`Renewing lease ${lease.key}`, RENEW, [k.lease(lease.key)],
        [lease.owner, String(lease.token), Math.ceil(ttlMs), retentionMs]));
      return reply.length === 0 ? null : { lease: toLease(lease.key, reply), drain: text(reply[3]) === '1' };
    },

    async release(lease) {
      await conn.eval(`Releasing lease ${lease.key}`, RELEASE, [k.lease(lease.key)], [lease.owner, String(lease.token), retentionMs]);
    },

    async requestDrain(key) {
      checkKey(key, 'key');
      await conn.eval(`Requesting a drain of lease ${key}`, DRAIN, [k.lease(key)], []);
    },

    async inspect(key) {
      checkKey(key, 'key');
      const reply = list(await conn.call(`Inspecting lease ${key}`, ['HMGET', k.lease(key), 'owner', 'token', 'exp']));
      const owner = text(reply[0]);
      return owner ? toLease(key, reply) : null;
    },
  };
}

function checkKey(value: unknown, name: string): void {
  if (typeof value !== 'string' || value === '') throw new InvalidOptionsError(`lease ${name} must be a non-empty string.`);
}

function checkTtl(ttlMs: unknown): void {
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new InvalidOptionsError(`lease ttlMs must be a positive number of milliseconds, got ${JSON.stringify(ttlMs)}.`);
  }
}
