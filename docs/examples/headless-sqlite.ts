// A headless run on the SQLite ops store: the run outlives the process.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exitCodeFor, inspectRun, runHeadless } from 'cairn/headless';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createMockModel } from 'cairn/testing';

const dir = mkdtempSync(join(tmpdir(), 'cairn-headless-'));
const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
try {
  const report = await runHeadless({
    model: createMockModel({ responses: [{ text: 'Backups verified.' }] }),
    prompt: 'Verify last night\'s backups.',
    store: ops.agentRuns,
    runId: 'backup-check',
  });
  console.log(report.outcome, exitCodeFor(report));
} finally {
  await ops.close();
}

// Another process (here: a second handle on the same file) reads it back.
const again = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
const stored = await inspectRun(again.agentRuns, 'backup-check');
console.log(stored.status, stored.output);
await again.close();
rmSync(dir, { recursive: true, force: true });
