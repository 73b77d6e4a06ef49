/**
 * What the corpus tests share: where the corpus lives, how its folders and
 * files are read, and the two kinds of fresh store a stored record is put
 * back into (in memory, and a SQLite file) before the current code resumes it.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect } from 'vitest';
import { createInMemoryAgentRunStore, type AgentRunEnvelope, type AgentRunStore } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';

/** The corpus folder, test/compat/corpus/. */
export const CORPUS = fileURLToPath(new URL('./corpus/', import.meta.url));

/** The corpus folders whose names match `pattern` (e.g. /^handoff-v\d+$/), oldest version first. */
export function corpusFolders(pattern: RegExp): string[] {
  return readdirSync(CORPUS).filter((entry) => pattern.test(entry)).sort();
}

/** The JSON files of one corpus folder whose names match `pattern`, sorted. */
export function corpusFiles(folder: string, pattern: RegExp = /\.json$/): string[] {
  return readdirSync(join(CORPUS, folder)).filter((file) => pattern.test(file)).sort();
}

/** One corpus file, parsed. The files are never edited (see corpus/README.md). */
export function readCorpusFile(folder: string, file: string): unknown {
  return JSON.parse(readFileSync(join(CORPUS, folder, file), 'utf8'));
}

/** Where a fixture is loaded: a fresh store of each kind, holding exactly the fixture's record. */
export interface StoreKind {
  name: string;
  open(envelope: AgentRunEnvelope): Promise<AgentRunStore>;
}

/**
 * The in-memory store and a SQLite file (in a temporary folder named
 * `<tmpPrefix>…`, removed after each test). Call it at the top of a test file:
 * it registers the afterEach that closes what the test opened.
 */
export function corpusStores(tmpPrefix: string): StoreKind[] {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });
  return [
    {
      name: 'in-memory store',
      // The documented seed: envelopes are stored as they are, revisions kept.
      open: async (envelope) => createInMemoryAgentRunStore([envelope]),
    },
    {
      name: 'SQLite file',
      async open(envelope) {
        const dir = mkdtempSync(join(tmpdir(), tmpPrefix));
        const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
        cleanups.push(() => {
          ops.close();
          rmSync(dir, { recursive: true, force: true });
        });
        // A SQLite store has no seed: it takes a run only through save, fenced by revision (stored + 1).
        // So the record is saved at revisions 1, 2, ... up to its own, each time with the fixture's
        // content, and the last save is the fixture itself, unchanged. The store keeps only that head;
        // the earlier saves leave nothing behind, and the load below shows the store holds the record
        // exactly as the old engine wrote it. (Rewriting the revision to 1 would be simpler, but the
        // resume would then see another record than the one in the corpus.)
        for (let revision = 1; revision <= envelope.revision; revision++) {
          await ops.agentRuns.save({ ...envelope, revision });
        }
        expect(await ops.agentRuns.load(envelope.runId)).toEqual(envelope);
        return ops.agentRuns;
      },
    },
  ];
}
