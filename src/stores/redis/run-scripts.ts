/**
 * The Lua of the Redis run store. Redis runs a script alone, start to end, so
 * each of these is one atomic step: a save checks the scope, the revision,
 * the lease (on the server's clock) and what the run's rows hold, and only
 * then writes. A script is not rolled back when it fails half way, so every
 * check comes before the first write.
 *
 * Run keys, in order: KEYS[1] head hash, [2] transcript list, [3] transcript
 * revisions, [4] receipts hash, [5] receipt steps, [6] receipt revisions.
 */
import { script } from './client.js';

/** The server's clock in ms, inside a script. */
export const NOW_MS = `local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

/**
 * A save. KEYS[7] the runs index, KEYS[8] the lease hash (any key when there is no lease).
 * ARGV: 1 runId, 2 scope, 3 revision, 4 check the rows ('1'/'0'), 5-8 the expected transcript length, transcript
 * digest, receipts digest, settled step; 9 lease owner ('' for none), 10 lease token; 11 status, 12 has binding,
 * 13 binding, 14 createdAt, 15 updatedAt, 16 pending approvals, 17 pending client calls, 18 head, 19-22 the new
 * transcript length, digests and settled step; 23 trim the transcript from ('' for no trim), 24 replace the
 * receipts, 25 transcript parts, 26 index of the first, 27 receipts to delete, 28 receipts to write; then the parts,
 * the keys to delete, and (key, step, bytes) per receipt.
 * Returns {'ok'}, {'scope'}, {'conflict', stored revision or ''}, {'lease'} or {'stale'} (the rows are not what
 * the caller planned against: it reads them and plans again).
 */
export const SAVE = script('write', `${NOW_MS}
local cur = redis.call('HMGET', KEYS[1], 'scope', 'revision', 'tlen', 'tdig', 'rdig', 'settled')
if cur[1] and cur[1] ~= ARGV[2] then return {'scope'} end
local stored = 0
if cur[2] then stored = tonumber(cur[2]) end
local rev = tonumber(ARGV[3])
if stored ~= rev - 1 then return {'conflict', cur[2] or ''} end
if ARGV[9] ~= '' then
  local l = redis.call('HMGET', KEYS[8], 'owner', 'token', 'exp')
  if l[1] ~= ARGV[9] or l[2] ~= ARGV[10] or not l[3] or tonumber(l[3]) <= now_ms() then return {'lease'} end
end
if ARGV[4] == '1' then
  if cur[3] ~= ARGV[5] or cur[4] ~= ARGV[6] or cur[5] ~= ARGV[7] or cur[6] ~= ARGV[8] then return {'stale'} end
end
local nm, first, nd, nr = tonumber(ARGV[25]), tonumber(ARGV[26]), tonumber(ARGV[27]), tonumber(ARGV[28])
local len = redis.call('LLEN', KEYS[2])
if stored == 0 then len = 0 end
if ARGV[23] ~= '' then len = math.min(len, tonumber(ARGV[23])) end
-- The transcript is only ever appended to: the parts go right after those kept.
if nm > 0 and first ~= len then return {'stale'} end

if stored == 0 then
  -- A first save starts from nothing (rows a pruned run left, if any, go).
  redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
  redis.call('HSET', KEYS[1], 'createdAt', ARGV[14])
elseif ARGV[23] ~= '' then
  local from = tonumber(ARGV[23])
  if from == 0 then
    redis.call('DEL', KEYS[2], KEYS[3])
  else
    redis.call('LTRIM', KEYS[2], 0, from - 1)
    redis.call('LTRIM', KEYS[3], 0, from - 1)
  end
end
local i = 29
for _ = 1, nm do
  redis.call('RPUSH', KEYS[2], ARGV[i])
  redis.call('RPUSH', KEYS[3], ARGV[3])
  i = i + 1
end
if ARGV[24] == '1' then redis.call('DEL', KEYS[4], KEYS[5], KEYS[6]) end
for _ = 1, nd do
  redis.call('HDEL', KEYS[4], ARGV[i])
  redis.call('HDEL', KEYS[5], ARGV[i])
  redis.call('HDEL', KEYS[6], ARGV[i])
  i = i + 1
end
for _ = 1, nr do
  redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 2])
  redis.call('HSET', KEYS[5], ARGV[i], ARGV[i + 1])
  redis.call('HSET', KEYS[6], ARGV[i], ARGV[3])
  i = i + 3
end
redis.call('HSET', KEYS[1], 'scope', ARGV[2], 'revision', ARGV[3], 'status', ARGV[11], 'updatedAt', ARGV[15],
  'pa', ARGV[16], 'pc', ARGV[17], 'head', ARGV[18], 'tlen', ARGV[19], 'tdig', ARGV[20], 'rdig', ARGV[21], 'settled', ARGV[22])
if ARGV[12] == '1' then redis.call('HSET', KEYS[1], 'binding', ARGV[13]) else redis.call('HDEL', KEYS[1], 'binding') end
redis.call('ZADD', KEYS[7], ARGV[15], ARGV[1])
return {'ok'}
`);

/**
 * A load: the head and every row, in one snapshot. ARGV: 1 '1' when a scope is given, 2 the scope.
 * Returns {} (no run), {'scope'} (another scope's run: no data) or
 * {'ok', scope, revision, head, transcript digest, receipts digest, parts, part revisions, receipts (key, bytes)...,
 * receipt revisions (key, revision)...}.
 */
export const LOAD = script('read', `
local h = redis.call('HMGET', KEYS[1], 'scope', 'revision', 'head', 'tdig', 'rdig')
if not h[1] then return {} end
if ARGV[1] == '1' and h[1] ~= ARGV[2] then return {'scope'} end
return {'ok', h[1], h[2], h[3] or '', h[4] or '', h[5] or '',
  redis.call('LRANGE', KEYS[2], 0, -1), redis.call('LRANGE', KEYS[3], 0, -1),
  redis.call('HGETALL', KEYS[4]), redis.call('HGETALL', KEYS[6])}
`);

/**
 * What a save plans against, when the store object does not remember it: the head, digests and revision, and
 * the bytes of every receipt of a step at or after the settled one. Returns {} (no run) or
 * {'ok', scope, revision, head, transcript digest, receipts digest, transcript length, settled step, open receipts (key, bytes)...}.
 */
export const STATE = script('read', `
local h = redis.call('HMGET', KEYS[1], 'scope', 'revision', 'head', 'tdig', 'rdig', 'tlen', 'settled')
if not h[1] then return {} end
local settled = tonumber(h[7] or '0')
local steps = redis.call('HGETALL', KEYS[5])
local open = {}
for i = 1, #steps, 2 do
  if tonumber(steps[i + 1]) >= settled then
    open[#open + 1] = steps[i]
    open[#open + 1] = redis.call('HGET', KEYS[4], steps[i]) or ''
  end
end
return {'ok', h[1], h[2], h[3] or '', h[4] or '', h[5] or '', h[6] or '', h[7] or '', open}
`);

/** The summary fields of each run named in ARGV (a nil for a run that is gone). */
export const SUMMARIES = script('read', `
local out = {}
for i = 1, #ARGV do
  local f = redis.call('HMGET', ARGV[i], 'scope', 'status', 'revision', 'binding', 'createdAt', 'updatedAt', 'pa', 'pc')
  if f[1] then out[i] = f else out[i] = false end
end
return out
`);

/**
 * Deletes one run if it is still terminal and last saved before ARGV[2]. KEYS[7] the runs index; ARGV[1] the run id.
 * Returns 1 when it went.
 */
export const PRUNE_ONE = script('write', `
local f = redis.call('HMGET', KEYS[1], 'status', 'updatedAt')
if not f[1] then
  redis.call('ZREM', KEYS[7], ARGV[1])
  return 0
end
if (f[1] ~= 'completed' and f[1] ~= 'failed' and f[1] ~= 'stopped') or tonumber(f[2]) >= tonumber(ARGV[2]) then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
redis.call('ZREM', KEYS[7], ARGV[1])
return 1
`);
