// Leases in memory: the clock is moved by hand, and the store refuses a save whose lease was lost.
import {
  AgentRunLeaseError, createInMemoryAgentRunStore, createInMemoryLeaseProvider, runAgent,
} from 'cairn/agent';
import { createManualClock, createMockModel } from 'cairn/testing';

// One clock for both: the store reads a lease's expiry on it.
const clock = createManualClock(0);
const leases = createInMemoryLeaseProvider({ clock });
const store = createInMemoryAgentRunStore([], { clock, leases });

const key = 'run:report-7';
const show = (value: unknown) => JSON.stringify(value);
let a = (await leases.acquire(key, 'worker-a', 30_000))!;
console.log('worker-a acquires:', show(a));
console.log('worker-b acquires:', show(await leases.acquire(key, 'worker-b', 30_000)));

// Someone asks the holder to stop; it learns so on its next renew.
await leases.requestDrain(key);
clock.advance(10_000);
const renewal = (await leases.renew(a, 30_000))!;
console.log('worker-a renews:', show(renewal));
a = renewal.lease;

// A run to save: the engine saves it (revision 1, 2, ...) as it goes.
await runAgent({
  model: createMockModel({ responses: [{ text: 'The report is ready.' }] }),
  prompt: 'Write the report.',
  session: { store, runId: 'report-7', scope: 'tenant-a' },
  deps: { clock },
});
const record = (await store.load('report-7'))!;
await store.save({ ...record, revision: record.revision + 1 }, { lease: a });
console.log("worker-a's save: stored");

// worker-a stalls past its expiry; worker-b takes over with a greater token.
clock.advance(60_000);
const b = (await leases.acquire(key, 'worker-b', 30_000))!;
console.log('worker-b acquires:', show(b));
console.log('worker-a renews:', show(await leases.renew(a, 30_000)));

try {
  await store.save({ ...record, revision: record.revision + 2 }, { lease: a });
} catch (error) {
  if (!AgentRunLeaseError.isInstance(error)) throw error;
  console.log(`worker-a's save: ${error.code}`);
}
await store.save({ ...record, revision: record.revision + 2 }, { lease: b });
console.log("worker-b's save: stored");

// Released: the next owner takes it at once, with a new token and no drain request.
await leases.release(b);
console.log('after release:', show(await leases.inspect(key)));
const c = (await leases.acquire(key, 'worker-c', 30_000))!;
console.log('worker-c acquires:', show(c), 'drain:', (await leases.renew(c, 30_000))!.drain);
