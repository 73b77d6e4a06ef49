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
import { createFileSessionService, createInMemorySessionService } from 'cairn/sessions';
import { createPostgresSessionService, type PostgresSessionService } from 'cairn/sessions/postgres';
import { createSqliteSessionService, type SqliteSessionService } from 'cairn/sessions/sqlite';
import { defineSessionServiceConformance, type SessionServiceFixture } from 'cairn/testing';
import { defineStoreMatrix, type CaseData } from '../conformance/store-matrix.js';

const pgService = (url: string, schema: string, max: number) => createPostgresSessionService({ connectionString: url, poolOptions: { max } }, { schema });

/** Damages a stored session's turn row so that it no longer parses. */
function corrupter(data: CaseData): (sessionId: string) => Promise<void> {
  if (data.backend === 'sqlite') {
    return async (sessionId) => {
      const db = new Database(data.path);
      db.prepare("UPDATE cairn_session_turns SET body = '{\"turnId\":' WHERE session_id = ?").run(sessionId);
      db.close();
    };
  }
  return async (sessionId) => {
    await data.env.sql(`UPDATE "${data.schema}".cairn_session_turns SET body = '[1,' WHERE session_id = $1`, [sessionId]);
  };
}

defineStoreMatrix<SqliteSessionService | PostgresSessionService, SessionServiceFixture>({
  label: 'session service',
  define: defineSessionServiceConformance,
  inMemory: () => ({ service: createInMemorySessionService() }),
  backends: {
    sqlite: (path) => createSqliteSessionService({ path, synchronous: 'normal' }),
    postgres: {
      open: (env, schema) => pgService(env.url, schema, 4),
      async setup(env, schema) {
        const setup = pgService(env.url, schema, 1);
        await setup.setup();
        await setup.close();
      },
    },
  },
  fixture: (opened, data) => ({ service: opened.open(), reopen: async () => opened.open(), corrupt: corrupter(data) }),
});

const directories = new WeakMap<SessionServiceFixture, string>();

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
    directories.set(fixture, directory);
    return fixture;
  },
  async destroy(fixture) {
    const directory = directories.get(fixture);
    if (directory) rmSync(directory, { recursive: true, force: true });
  },
}, { describe, it });
