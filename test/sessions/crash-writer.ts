/**
 * Appends turns to one file session as fast as it can until it is killed
 * (test/sessions/file.test.ts SIGKILLs it in the middle of its writes).
 * argv: <directory> <writer>
 */
import { appendSessionTurn, createFileSessionService } from 'cairn/sessions';

const [directory, writer] = process.argv.slice(2) as [string, string];
const service = createFileSessionService({ directory });
const key = { appName: 'support-copilot', userId: 'user_123', sessionId: 'crashy' };
console.log('ready');
for (let i = 0; ; i++) {
  // A large turn, so the kill often lands while a file is being written.
  await appendSessionTurn(service, key, { turnId: `${writer}-${i}`, messages: [{ role: 'user', content: `${writer}-${i} `.repeat(20_000) }] });
}
