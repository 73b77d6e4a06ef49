// The replay journal of a SQLite ops store: frames appended on from the head the writer read, read from a cursor, aged out.
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { JournalConflictError, type JournalFrame } from 'cairn/ui';

const { mkdtempSync, rmSync } = process.getBuiltinModule('node:fs');
const { tmpdir } = process.getBuiltinModule('node:os');
const dir = mkdtempSync(`${tmpdir()}/cairn-journal-demo-`);
const path = `${dir}/ops.sqlite`;

// A clock moved by hand, and a retention of one hour (the default is a day).
let now = 1_000_000;
const clock = { now: () => now };
const ops = createSqliteOpsStore({ path, clock, journalRetentionMs: 3_600_000 });
const frame = (seq: number, data: unknown, end = false): JournalFrame => ({ seq, body: JSON.stringify({ type: 'data-agent', data }), end });

// The first leg of run r-1: three frames, the last one ends the leg.
await ops.journal.append('r-1', 0, [frame(1, 'run-start'), frame(2, { text: 'Héllo 👋' }), frame(3, 'suspended', true)], { scope: 'tenant-a' });
console.log('head:', JSON.stringify(await ops.journal.head('r-1')));

// A second writer that read the same head is refused, and nothing it sent is written.
try {
  await ops.journal.append('r-1', 0, [frame(1, 'run-start')], { scope: 'tenant-a' });
} catch (error) {
  if (!JournalConflictError.isInstance(error)) throw error;
  console.log(`second writer: ${error.code}, the stream is at seq ${error.found}`);
}

// Another process on the file serves a client that saw seq 1: the frames it missed, exactly as sent.
const other = createSqliteOpsStore({ path, clock });
for (const f of await other.journal.read('r-1', 1)) console.log(`replay ${f.seq}${f.end ? ' (ends the leg)' : ''}: ${f.body}`);
other.close();

// The next leg numbers on from the head.
now += 5_000;
await ops.journal.append('r-1', 3, [frame(4, 'resumed'), frame(5, 'completed', true)], { scope: 'tenant-a' });
console.log('head:', JSON.stringify(await ops.journal.head('r-1')));

// Two hours on, the next append sweeps away every stream older than the retention; prune deletes on demand.
now += 7_200_000;
await ops.journal.append('r-2', 0, [frame(1, 'run-start')], { scope: 'tenant-a' });
console.log('r-1 after two hours:', await ops.journal.head('r-1'));
console.log('pruned now:', await ops.journal.prune({ before: now + 1 }));
ops.close();
rmSync(dir, { recursive: true, force: true });
