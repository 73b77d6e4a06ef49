/**
 * One process of the two-process session test: runs `count` turns on one
 * session, each as a Runner does (read the session, "run" the turn on its
 * history, append the turn at the revision it read, retried on conflict),
 * and prints what it saw as one JSON line.
 *
 * argv: <file|sqlite|postgres> <directory|path|url> <schema|-> <writer> <count>
 *
 * It prints `ready` once its service is open, and starts when a line comes on stdin.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { appendSessionTurn, createFileSessionService, type SessionService } from 'cairn/sessions';
import { createPostgresSessionService } from 'cairn/sessions/postgres';
import { createSqliteSessionService } from 'cairn/sessions/sqlite';

const [kind, where, schema, writer, countText] = process.argv.slice(2) as [string, string, string, string, string];
const count = Number(countText);
const key = { appName: 'support-copilot', userId: 'user_123', sessionId: 'shared' };

let close = async () => {};
let inner: SessionService;
if (kind === 'file') inner = createFileSessionService({ directory: where });
else if (kind === 'sqlite') {
  const service = createSqliteSessionService({ path: where });
  close = async () => service.close();
  inner = service;
} else {
  const service = createPostgresSessionService({ connectionString: where, poolOptions: { max: 2 } }, { schema });
  close = () => service.close();
  inner = service;
}

// Counts the conflicts the service answered, to show the two processes really raced.
let conflicts = 0;
const service: SessionService = {
  ...inner,
  kind: inner.kind,
  appendTurn: async (...args) => {
    const result = await inner.appendTurn(...args);
    if (result.status === 'conflict') conflicts += 1;
    return result;
  },
};

await service.getSession(key); // connected, tables read
console.log('ready');
await new Promise((resolve) => process.stdin.once('data', resolve));
process.stdin.pause();
let stale = 0;
for (let i = 0; i < count; i++) {
  const before = await service.getSession(key);
  const history = before?.messages.length ?? 0;
  await sleep(Math.random() * 2); // the turn's model call
  const turnId = `${writer}-${i}`;
  const after = await appendSessionTurn(service, key, {
    turnId,
    messages: [
      { role: 'user', content: `${turnId}: question` },
      { role: 'assistant', content: `${turnId}: answer after ${history} messages` },
    ],
  }, { expectedRevision: before?.revision ?? 0 });
  if (after.turns.at(-1)!.basedOnRevision !== after.revision - 1) stale += 1;
}
await close();
console.log(JSON.stringify({ writer, conflicts, stale }));
