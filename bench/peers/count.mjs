/**
 * What a step sends to its store, counted at the driver on both sides: every
 * statement better-sqlite3 runs (its transactions' BEGIN and COMMIT
 * included), every query a pg client sends (one round trip each), the commits
 * among them, and the bytes of the parameters of the writes. Each side has its
 * own copy of each driver (Cairn the repository's, LangGraph this package's),
 * so both copies are wrapped. Used on untimed loops only.
 */
import { createRequire } from 'node:module';
import Database from 'better-sqlite3';
import pg from 'pg';

const rootRequire = createRequire(new URL('../../package.json', import.meta.url));

const WRITE = /^\s*(?:WITH\b[\s\S]*?\b)?(INSERT|UPDATE|DELETE|REPLACE)\b/i;
const COMMIT = /^\s*(COMMIT|END)\b/i;
const BEGIN = /^\s*(BEGIN|START\s+TRANSACTION)\b/i;
const ROLLBACK = /^\s*ROLLBACK\b(?!\s+TO)/i;

function bytesOf(value) {
  if (value == null) return 0;
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return value.byteLength;
  if (typeof value === 'number' || typeof value === 'bigint') return 8;
  if (typeof value === 'boolean') return 1;
  if (Array.isArray(value)) return value.reduce((n, v) => n + bytesOf(v), 0);
  if (typeof value === 'object') return Object.values(value).reduce((n, v) => n + bytesOf(v), 0);
  return 0;
}

export function newTally() {
  return { statements: 0, commits: 0, writes: 0, writeBytes: 0 };
}

/** Counts into whichever tally `current()` returns (null: not counted). Returns the function that unwraps. */
export function countDrivers(current) {
  const undo = [];
  for (const Db of [Database, rootRequire('better-sqlite3')]) {
    const probe = new Db(':memory:');
    const proto = Object.getPrototypeOf(probe.prepare('SELECT 1'));
    probe.close();
    if (undo.some((u) => u.proto === proto)) continue;
    for (const method of ['run', 'get', 'all', 'iterate']) {
      const original = proto[method];
      proto[method] = function (...args) {
        const tally = current();
        if (tally) {
          const sql = this.source;
          tally.statements++;
          if (COMMIT.test(sql)) tally.commits++;
          else if (WRITE.test(sql)) {
            tally.writes++;
            tally.writeBytes += bytesOf(args);
            if (!this.database.inTransaction) tally.commits++;
          }
        }
        return original.apply(this, args);
      };
      undo.push({ proto, method, original });
    }
  }
  const inTx = new WeakSet();
  for (const driver of [pg, rootRequire('pg')]) {
    const proto = driver.Client.prototype;
    if (undo.some((u) => u.proto === proto)) continue;
    const original = proto.query;
    proto.query = function (...args) {
      const [config, values] = args;
      const tally = current();
      if (tally) {
        const sql = typeof config === 'string' ? config : config?.text ?? '';
        const params = Array.isArray(values) ? values : config?.values;
        tally.statements++;
        if (BEGIN.test(sql)) inTx.add(this);
        else if (COMMIT.test(sql) || ROLLBACK.test(sql)) {
          if (COMMIT.test(sql)) tally.commits++;
          inTx.delete(this);
        } else if (WRITE.test(sql)) {
          tally.writes++;
          tally.writeBytes += bytesOf(params);
          if (!inTx.has(this)) tally.commits++;
        }
      }
      return original.apply(this, args);
    };
    undo.push({ proto, method: 'query', original });
  }
  return () => {
    for (const { proto, method, original } of undo.reverse()) proto[method] = original;
  };
}
