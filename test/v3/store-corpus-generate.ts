/**
 * Writes the V3 store's compatibility fixture: a V3 run (store-corpus-agent.ts) suspended at
 * its payment's approval, as an in-memory V3 store loads it, and the packages it points to, in
 * <out>/v3-store/. Refuses to write into a folder that exists: corpus files are never regenerated.
 *
 *   npx tsx --conditions=source test/v3/store-corpus-generate.ts --out test/compat/corpus
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInMemoryAgentRunStoreV3, runAgent } from 'cairn/agent';
import { createEffects, WRITTEN_AT } from '../compat/corpus-agent.js';
import { LOOKUP, PAY, V3_CORPUS_RUN_ID, v3CorpusAgent } from './store-corpus-agent.js';
const at = process.argv.indexOf('--out');
const out = resolve(at >= 0 ? process.argv[at + 1]! : 'test/compat/corpus', 'v3-store');
if (existsSync(out)) throw new Error(`${out} exists: corpus files are never regenerated`);
const store = createInMemoryAgentRunStoreV3({ clock: { now: () => WRITTEN_AT } });
const result = await runAgent(v3CorpusAgent({ store, effects: createEffects(), responses: [LOOKUP, PAY] }) as never);
if (result.status !== 'suspended') throw new Error(`expected suspended, got ${result.status}: ${JSON.stringify(result.status === 'failed' ? result.error : null)}`);
const record = (await store.load(V3_CORPUS_RUN_ID))!;
const blobs: Record<string, unknown> = {};
for (const step of record.context?.steps ?? []) {
  const found = await store.getBlob(step.blob.digest);
  if (found.status !== 'found') throw new Error('missing blob');
  blobs[step.blob.digest] = found.content;
}
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'suspended-approval.json'), `${JSON.stringify(record, null, 2)}\n`);
writeFileSync(join(out, 'suspended-approval.blobs.json'), `${JSON.stringify(blobs, null, 2)}\n`);
console.log(record.version, record.revision, record.status, record.context?.steps.length, Object.keys(blobs).length, record.workingMemory?.revision);
