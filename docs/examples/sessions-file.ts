// A user's conversation kept across turns in a directory of files; every write is revisioned.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appendSessionTurn, createFileSessionService } from 'cairn/sessions';

const directory = join(mkdtempSync(join(tmpdir(), 'sessions-')), 'sessions');
let now = 1_000;
const sessions = createFileSessionService({ directory, clock: () => (now += 1) });
const key = { appName: 'support-copilot', userId: 'user_123', sessionId: 'demo' };

// Turn 1: nothing stored yet, so the turn is decided at revision 0 and creates the session.
const first = await appendSessionTurn(sessions, key, {
  turnId: 'run-1',
  messages: [
    { role: 'user', content: 'Remember that I prefer short answers.' },
    { role: 'assistant', content: 'Noted: short answers.' },
  ],
}, { expectedRevision: 0 });
console.log(`after turn 1: revision ${first.revision}, ${first.messages.length} messages`);

// Turn 2 starts from the stored history, as a Runner does.
const before = (await sessions.getSession(key))!;
console.log(`turn 2 sees: ${before.messages.map((m) => m.role).join(', ')}`);

// Meanwhile another process appends a turn of its own at the same revision.
const other = await sessions.appendTurn(key, { turnId: 'run-x', messages: [{ role: 'user', content: 'Also: I am in Oslo.' }] }, { expectedRevision: before.revision });
console.log(`the other process: ${other.status}`);

// A plain write at the old revision is a conflict, not an overwrite...
const stale = await sessions.appendTurn(key, { turnId: 'run-2', messages: [{ role: 'user', content: 'Summarize the account status.' }] }, { expectedRevision: before.revision });
console.log(`stale write: ${JSON.stringify(stale)}`);

// ...and appendSessionTurn appends the turn after the other one instead.
const second = await appendSessionTurn(sessions, key, {
  turnId: 'run-2',
  messages: [
    { role: 'user', content: 'Summarize the account status.' },
    { role: 'assistant', content: 'Active, no open invoices.' },
  ],
}, { expectedRevision: before.revision });
console.log(`after turn 2: revision ${second.revision}, turns ${second.turns.map((t) => `${t.turnId}@${t.revision} (read at ${t.basedOnRevision ?? "?"})`).join(', ')}`);

// The same turn id again is not written twice (a retry after an unclear failure is safe).
const retried = await sessions.appendTurn(key, { turnId: 'run-2', messages: [{ role: 'user', content: 'again' }] }, { expectedRevision: second.revision });
console.log(`retried turn: ${retried.status}`);

// Another user cannot read it, and an id that could leave the directory never reaches the disk.
for (const attempt of [
  () => sessions.getSession({ ...key, userId: 'user_456' }),
  () => sessions.getSession({ ...key, sessionId: '../../etc/passwd' }),
]) {
  await attempt().catch((error: { name: string; code: string }) => console.log(`${error.name} ${error.code}`));
}
console.log(JSON.stringify(await sessions.listSessions({ appName: 'support-copilot', userId: 'user_123' })));
