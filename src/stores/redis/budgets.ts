/**
 * Named budget ledgers on Redis: a hash per ledger (entry id -> the entry as
 * JSON) and a counter that every write to the ledger bumps.
 *
 * The admission rule is Cairn's own (`decideAdmission`, in JavaScript), so a
 * write is optimistic: read the counter and the entries in one script, decide,
 * then write with a script that applies only if the counter has not moved
 * (and bumps it). A write that finds it moved reads and decides again, after a
 * short jittered pause; concurrent admissions on any number of workers are so
 * decided one after the other and never together pass a ceiling. One that
 * keeps losing for {@link TRIES} rounds is the transient
 * `budget_admission_conflict`.
 */
import { BudgetError } from '../../errors/index.js';
import { decideAdmission, settled } from '../../policy/ledger.js';
import type { AdmitResult, BudgetLedger, LedgerEntry } from '../../policy/types.js';
import { checkLedgerName, type BudgetStore } from '../budgets-kit.js';
import { list, script, text, type RedisConn } from './client.js';
import type { Keys } from './keys.js';

/** Rounds a write may lose to other writers before it gives up. */
const TRIES = 64;

/** KEYS: 1 entries, 2 counter. Returns {counter, {id, json, id, json, ...}}. */
const READ = script('read', `
return {redis.call('GET', KEYS[2]) or '0', redis.call('HGETALL', KEYS[1])}
`);

/** KEYS: 1 entries, 2 counter. ARGV: 1 the counter read, 2 '1' to keep held entries, then id, json pairs. Returns 1 when written. */
const WRITE = script('write', `
if (redis.call('GET', KEYS[2]) or '0') ~= ARGV[1] then return 0 end
for i = 3, #ARGV, 2 do
  if ARGV[2] == '1' then redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) else redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
redis.call('INCR', KEYS[2])
return 1
`);

/** The entry's own fields, as the SQL stores' columns keep them. */
const stored = (e: LedgerEntry): LedgerEntry => ({
  id: e.id, scope: e.scope, runId: e.runId, model: e.model, status: e.status,
  estimate: { usd: e.estimate.usd, tokens: e.estimate.tokens }, usd: e.usd, tokens: e.tokens, at: e.at,
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const under = (scope: string | undefined) => (e: LedgerEntry) =>
  scope === undefined || e.scope === scope || e.scope.startsWith(`${scope}/`);

/** @internal Takes the store's connection, whose driver types stay out of the published declarations (redis is an optional peer). */
export function createRedisBudgets(conn: RedisConn, k: Keys): BudgetStore {
  return {
    ledger(name) {
      checkLedgerName(name);
      const keys = [k.ledgerEntries(name), k.ledgerVersion(name)];

      async function read(what: string): Promise<{ version: string; entries: Map<string, LedgerEntry> }> {
        const reply = list(await conn.eval(`${what} budget ledger ${name}`, READ, keys, []));
        const entries = new Map<string, LedgerEntry>();
        const pairs = list(reply[1]);
        for (let i = 0; i < pairs.length; i += 2) entries.set(text(pairs[i])!, JSON.parse(text(pairs[i + 1])!) as LedgerEntry);
        return { version: text(reply[0])!, entries };
      }

      /**
       * Reads, lets `decide` say what to write (null: nothing), and writes it if nobody wrote in between; else again.
       * Returns what `decide` returned last.
       */
      async function optimistic<T>(what: string, keepHeld: boolean,
        decide: (entries: Map<string, LedgerEntry>) => { result: T; write: LedgerEntry[] }): Promise<T> {
        for (let attempt = 1; ; attempt++) {
          const { version, entries } = await read(what);
          const { result, write } = decide(entries);
          if (write.length === 0) return result;
          const args = [version, keepHeld ? '1' : '0', ...write.flatMap((e) => [e.id, JSON.stringify(stored(e))])];
          if (await conn.eval(`${what} budget ledger ${name}`, WRITE, keys, args) === 1) return result;
          if (attempt >= TRIES) {
            throw new BudgetError('budget_admission_conflict',
              `${what} budget ledger ${name} lost to other writers ${TRIES} times in a row; try again.`);
          }
          await sleep(Math.random() * Math.min(2 * attempt, 20));
        }
      }

      const ledger: BudgetLedger = {
        name,
        // Each write is on the server before it returns (durable as the server's persistence is: see docs/redis.md).
        durable: true,
        admit(request) {
          return optimistic<AdmitResult>('Admitting to', true, (entries) => {
            const held = entries.get(request.id);
            if (held) return { result: { admitted: true, entry: held }, write: [] };
            const decision = decideAdmission([...entries.values()].filter((e) => e.status !== 'released'), request);
            return { result: decision, write: decision.admitted ? [decision.entry] : [] };
          });
        },
        async settle(id, outcome) {
          await optimistic('Settling in', false, (entries) => {
            const before = entries.get(id);
            if (!before) return { result: undefined, write: [] };
            const after = settled(before, outcome);
            return { result: undefined, write: after === before ? [] : [after] };
          });
        },
        async entries(scope) {
          const { entries } = await read('Reading');
          return [...entries.values()].filter(under(scope))
            .sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
        },
        async restore(entries) {
          if (entries.length === 0) return;
          await optimistic('Restoring', true, () => ({ result: undefined, write: [...entries] }));
        },
      };
      return ledger;
    },
  };
}
