/**
 * The Redis AgentStreamJournal: a head hash per stream (last seq, whether it
 * ended its leg, scope, `updatedAt` in ms on the server's clock), its frames
 * as a list (seq n at index n - 1, each element the end flag and the body),
 * and a sorted set of stream ids by `updatedAt` for retention and prune.
 *
 * An append is one script: it moves the head on only when its last seq is
 * still `after` (and the scope matches), then pushes the frames, so two
 * writers on the same `after` never both write.
 */
import { JournalConflictError, checkAppend, readLimit, type AgentStreamJournal, type JournalHead } from '../../ui/journal.js';
import { appendScope, checkStorableBodies, checkStreamId, pruneBefore, readAfter, sweepSchedule } from '../journal-kit.js';
import { list, num, script, text, type RedisConn } from './client.js';
import type { Keys } from './keys.js';
import { NOW_MS } from './run-scripts.js';

/**
 * KEYS: 1 head, 2 frames, 3 the streams index. ARGV: 1 stream id, 2 after, 3 has scope, 4 scope, 5 the new last
 * seq, 6 its end flag, then one element per frame. Returns {'ok'} or {'conflict', last seq or '', scope matches}.
 */
const APPEND = script('write', `${NOW_MS}
local h = redis.call('HMGET', KEYS[1], 'last', 'scope')
local last = tonumber(h[1] or '0')
local sameScope = (ARGV[3] == '1' and h[2] == ARGV[4]) or (ARGV[3] == '0' and not h[2])
if last ~= tonumber(ARGV[2]) or (h[1] and not sameScope) then
  return {'conflict', h[1] or '', sameScope and '1' or '0'}
end
local now = now_ms()
if not h[1] then
  redis.call('DEL', KEYS[2])
  if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'scope', ARGV[4]) end
end
for i = 7, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
redis.call('HSET', KEYS[1], 'last', ARGV[5], 'ended', ARGV[6], 'updated', now)
redis.call('ZADD', KEYS[3], now, ARGV[1])
return {'ok'}
`);

/**
 * Deletes every stream updated before a time: ARGV[1] that time as a ZRANGE bound, or (ARGV[2] = '1') a number of
 * ms before the server's now; ARGV[3], ARGV[4] the key prefixes of a head and of a frame list. KEYS[1] the streams index.
 */
const PRUNE = script('write', `${NOW_MS}
local bound = ARGV[1]
if ARGV[2] == '1' then bound = '(' .. (now_ms() - tonumber(ARGV[1])) end
local ids = redis.call('ZRANGE', KEYS[1], bound, '-inf', 'BYSCORE', 'REV')
for _, id in ipairs(ids) do
  redis.call('DEL', ARGV[3] .. id, ARGV[4] .. id)
  redis.call('ZREM', KEYS[1], id)
end
return #ids
`);

/** @internal Takes the store's connection, whose driver types stay out of the published declarations (redis is an optional peer). */
export function createRedisJournal(conn: RedisConn, k: Keys, retentionMs: number): AgentStreamJournal {
  const schedule = sweepSchedule(retentionMs, { now: () => Date.now() });

  const readHead = async (streamId: string) =>
    list(await conn.call(`Reading journal stream ${streamId}`, ['HMGET', k.stream(streamId), 'last', 'ended', 'scope', 'updated']));

  return {
    async head(streamId): Promise<JournalHead | undefined> {
      checkStreamId(streamId);
      const h = await readHead(streamId);
      if (h[0] === null || h[0] === undefined) return undefined;
      return { seq: num(h[0])!, ended: text(h[1]) === '1', scope: text(h[2]), updatedAt: num(h[3])! };
    },

    async append(streamId, after, batch, appendOptions) {
      checkAppend(streamId, after, batch);
      checkStorableBodies(batch);
      const scope = appendScope(appendOptions);
      const last = batch[batch.length - 1]!;
      const reply = list(await conn.eval(`Appending to journal stream ${streamId}`, APPEND,
        [k.stream(streamId), k.frames(streamId), k.journals],
        [streamId, after, scope === null ? '0' : '1', scope ?? '', last.seq, last.end ? '1' : '0',
          ...batch.map((f) => `${f.end ? '1' : '0'}${f.body}`)]));
      if (text(reply[0]) !== 'ok') {
        const found = text(reply[1]);
        const at = found === '' || found === null ? null : Number(found);
        if ((at ?? 0) === after && text(reply[2]) === '0') {
          throw new JournalConflictError(streamId, after, at, `Stream "${streamId}" belongs to another scope.`);
        }
        throw new JournalConflictError(streamId, after, at);
      }
      if (schedule.due()) {
        // Housekeeping after the append: a sweep that fails must not fail the append; the next one retries.
        await conn.eval('Sweeping the journal', PRUNE, [k.journals], [retentionMs, '1', k.streamPrefix, k.framesPrefix]).catch(() => undefined);
      }
    },

    async read(streamId, after, limit) {
      checkStreamId(streamId);
      const from = readAfter(after);
      const max = readLimit(limit);
      const rows = list(await conn.call(`Reading journal stream ${streamId}`, ['LRANGE', k.frames(streamId), from, from + max - 1]));
      return rows.map((row, i) => {
        const t = text(row)!;
        return { seq: from + i + 1, body: t.slice(1), end: t[0] === '1' };
      });
    },

    async prune(options) {
      const before = pruneBefore(options);
      const bound = before === Infinity ? '+inf' : before === -Infinity ? '-inf' : `(${before}`;
      const gone = await conn.eval('Pruning the journal', PRUNE, [k.journals], [bound, '0', k.streamPrefix, k.framesPrefix]);
      return typeof gone === 'number' ? gone : 0;
    },
  };
}
