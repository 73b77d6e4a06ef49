/** `cairn/ops/redis`: runs, leases, circuit breakers, the replay journal and budget ledgers on one Redis server. */
export {
  createRedisOpsStore,
  StoreUnreachableError,
  type RedisAgentRunStore,
  type RedisOpsStore,
  type RedisOpsStoreOptions,
} from '../../stores/redis/index.js';
export { UnsupportedStoreError } from '../../errors/index.js';
