/**
 * The session service conformance suite against the four services: in
 * memory, a directory of files, the SQLite ops file and the PostgreSQL ops
 * schema. Every reopen() of a durable one is another service object over the
 * same data, as a second process opens it; corrupt() damages the stored
 * session the way a torn write or an editor would.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, it } from 'vitest';
import { createFileSessionService, createInMemorySessionService, type SessionService } from 'cairn/sessions';
import { createPostgresSessionService, type PostgresSessionService } from 'cairn/sessions/postgres';
import { createSqliteSessionService, type SqliteSessionService } from 'cairn/sessions/sqlite';
import { defineSessionServiceConformance, type SessionServiceFixture } from 'cairn/testing';
import { describePostgres } from '../stores/pg-env.js';

const cleanups = new WeakMap<SessionServiceFixture, () => Promise<void>>();
const destroy = async (fixture: SessionServiceFixture) => cleanups.get(fixture)?.();

defineSessionServiceConformance({ name: 'in-memory', create: async () => ({ service: createInMemorySessionService() }) }, { describe, it });

defineSessionServiceConformance({
  name: 'file',
  async create() {
    const directory = mkdtempSync(join(tmpdir(), 'cairn-sessions-'));
    const fixture: SessionServiceFixture = {
      service: createFileSessionService({ directory }),
      reopen: async () => createFileSessionService({ directory }),
      // A write cut off half way, as a service without the temp file and rename would leave it.
      corrupt: async (sessionId) => writeFileSync(join(directory, `${sessionId}.json`), '{"kind":"cairn-session","version":1,"appN'),
    };
    cleanups.set(fixture, async () => rmSync(directory, { recursive: true, force: true }));
    return fixture;
  },
  destroy,
}, { describe, it });

defineSessionServiceConformance({
  name: 'sqlite',
  async create() {
    const directory = mkdtempSync(join(tmpdir(), 'cairn-sessions-sqlite-'));
    const path = join(directory, 'ops.sqlite');
    const opened: SqliteSessionService[] = [];
    const open = () => {
      const service = createSqliteSessionService({ path, synchronous: 'normal' });
      opened.push(service);
      return service;
    };
    const fixture: SessionServiceFixture = {
      service: open(),
      reopen: async () => open(),
      corrupt: async (sessionId) => {
        const db = new Database(path);
        db.prepare("UPDATE cairn_session_turns SET body = '{\"turnId\":' WHERE session_id = ?").run(sessionId);
        db.close();
      },
    };
    cleanups.set(fixture, async () => {
      for (const service of opened) service.close();
      rmSync(directory, { recursive: true, force: true });
    });
    return fixture;
  },
  destroy,
}, { describe, it });

describePostgres('postgres session service', (env) => {
  defineSessionServiceConformance({
    name: 'postgres',
    async create() {
      const schema = env.newSchema();
      const opened: PostgresSessionService[] = [];
      const open = () => {
        const service = createPostgresSessionService({ connectionString: env.url, poolOptions: { max: 4 } }, { schema });
        opened.push(service);
        return service;
      };
      const first = open();
      await first.setup();
      const fixture: SessionServiceFixture = {
        service: first,
        reopen: async (): Promise<SessionService> => open(),
        corrupt: async (sessionId) => {
          await env.sql(`UPDATE "${schema}".cairn_session_turns SET body = '[1,' WHERE session_id = $1`, [sessionId]);
        },
      };
      cleanups.set(fixture, async () => {
        for (const service of opened) await service.close();
      });
      return fixture;
    },
    destroy,
  }, { describe, it: (name, fn) => it(name, fn, 60_000) });
});
