// A V3 store in the file of a SQLite ops store: a package is stored once however many
// steps send it, a forged one is refused, and prune takes the package with the last run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { contextBlobDigest } from 'cairn/agent';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createManualClock, v3TestEnvelope } from 'cairn/testing';

const dir = mkdtempSync(join(tmpdir(), 'cairn-v3-'));
const clock = createManualClock(1_767_225_600_000);
const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite'), clock });
const runs = createSqliteAgentRunStoreV3(ops, { clock });

const blocks = [{ type: 'retrieval', text: 'Deploys need a green CI run.' }];
const digest = contextBlobDigest(blocks);
const blob = { digest, content: { blocks } };
const step = (n: number) => ({ step: n, phase: 'loop' as const, blob: { digest }, manifest: { refresh: n === 0 ? 'initial' : 'reused' } });

// Each step's save carries its package; the second step's is the first's, so nothing new is stored.
await runs.save(v3TestEnvelope('deploy-1', 1, { context: { steps: [step(0)] } }), { blobs: [blob] });
clock.advance(1_000);
await runs.save(v3TestEnvelope('deploy-1', 2, { status: 'completed', context: { steps: [step(0), step(1)] } }), { blobs: [blob] });
const record = await runs.load('deploy-1');
console.log(record?.version, record?.context?.steps.length, runs.rowCounts().blobs); // 3 2 1
console.log((await runs.getBlob(record!.context!.steps[1]!.blob.digest)).status); // found
console.log(new Date(record!.updatedAt).toISOString()); // the store's clock: 2026-01-01T00:00:01.000Z

// Content that does not hash to its digest is refused, and nothing is written.
try {
  await runs.putBlob({ digest, content: { blocks: [{ type: 'retrieval', text: 'Deploy on Fridays.' }] } });
} catch (error) {
  console.log((error as { code: string }).code); // blob_digest_mismatch
}

clock.advance(60_000);
console.log(await runs.prune({ terminalBefore: clock.now() }), (await runs.getBlob(digest)).status); // 1 missing
ops.close();
rmSync(dir, { recursive: true, force: true });
