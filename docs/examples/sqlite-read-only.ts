// Inspecting a store without touching it: readonly opens a Cairn file for reading only, and anything else is refused.
import { runAgent } from 'cairn/agent';
import { createSqliteOpsStore, NotACairnStoreError } from 'cairn/ops/sqlite';
import { createMockModel } from 'cairn/testing';

const { mkdtempSync, readdirSync, rmSync, writeFileSync } = process.getBuiltinModule('node:fs');
const { tmpdir } = process.getBuiltinModule('node:os');
const dir = mkdtempSync(`${tmpdir()}/cairn-read-only-demo-`);
const path = `${dir}/runs.sqlite`;

const ops = createSqliteOpsStore({ path });
await runAgent({ model: createMockModel({ responses: [{ text: 'Hi.' }] }), prompt: 'Hello.', session: { store: ops.agentRuns, runId: 'r-1', scope: 'a' } });
ops.close();

// Read only: nothing is created beside the file, and a write is refused.
const reader = createSqliteOpsStore({ path, readonly: true });
console.log(`read: ${(await reader.agentRuns.load('r-1'))?.status}`);
const refused = await reader.agentRuns.prune({ terminalBefore: Infinity }).then(() => 'pruned', () => 'refused');
console.log(`a write: ${refused}`);
reader.close();
console.log(`files: ${readdirSync(dir).join(', ')}`);

// create: false (and readonly) refuse a file that is not a Cairn store, before writing to it.
writeFileSync(`${dir}/notes.txt`, 'not a database');
const attempts = {
  'create: false on a text file': { path: `${dir}/notes.txt`, create: false },
  'readonly on a text file': { path: `${dir}/notes.txt`, readonly: true },
  'create: false on a missing file': { path: `${dir}/missing.sqlite`, create: false },
};
for (const [label, options] of Object.entries(attempts)) {
  try {
    createSqliteOpsStore(options);
  } catch (error) {
    if (!NotACairnStoreError.isInstance(error)) throw error;
    console.log(`${label}: ${error.name} (${error.code})`);
  }
}
rmSync(dir, { recursive: true, force: true });
