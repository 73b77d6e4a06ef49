/**
 * The Redis BreakerStore: one field per `provider:modelId` in one hash, shared
 * by every worker on the server. `cooldownUntil` is kept as given: a time on
 * the run's clock, compared by the breaker, never by Redis.
 */
import { checkBreakerKey as checkKey, checkBreakerState as checkState, type BreakerStore } from '../../models/breaker-store.js';
import { text, type RedisConn } from './client.js';
import type { Keys } from './keys.js';

/** @internal Takes the store's connection, whose driver types stay out of the published declarations (redis is an optional peer). */
export function createRedisBreakerStore(conn: RedisConn, k: Keys): BreakerStore {
  return {
    async get(key) {
      checkKey(key);
      const value = text(await conn.call(`Reading breaker ${key}`, ['HGET', k.breakers, key]));
      if (value === null) return undefined;
      const [failures, cooldownUntil] = JSON.parse(value) as [number, number | null];
      return cooldownUntil === null ? { failures } : { failures, cooldownUntil };
    },
    async set(key, state) {
      checkKey(key);
      const { failures, cooldownUntil } = checkState(state);
      // One command: last writer wins, as with any get/set store.
      await conn.call(`Writing breaker ${key}`, ['HSET', k.breakers, key, JSON.stringify([failures, cooldownUntil ?? null])]);
    },
  };
}
