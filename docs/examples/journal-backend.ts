// A journal backend of your own, checked by the journal conformance suite: one over a Map, and one that forgot the scope check.
import { checkAppend, readLimit } from 'cairn/stores';
import { createManualClock, defineJournalConformance, type ConformanceTestApi } from 'cairn/testing';
import { JournalConflictError, type AgentStreamJournal, type JournalFrame } from 'cairn/ui';

interface Stream {
  scope: string | null;
  updatedAt: number;
  frames: JournalFrame[];
}

function createMapJournal(data: Map<string, Stream>, clock: { now(): number }, options = { checkScope: true }): AgentStreamJournal {
  return {
    async head(streamId) {
      const stream = data.get(streamId);
      const last = stream?.frames.at(-1);
      return stream && last && { seq: last.seq, ended: last.end, scope: stream.scope, updatedAt: stream.updatedAt };
    },
    async append(streamId, after, frames, { scope } = {}) {
      checkAppend(streamId, after, frames);
      const stream = data.get(streamId);
      const found = stream ? stream.frames.length : null;
      // Check the head, then write, with nothing awaited in between: a transaction's work in a real database.
      if ((found ?? 0) !== after) throw new JournalConflictError(streamId, after, found);
      if (options.checkScope && stream && stream.scope !== (scope ?? null)) {
        throw new JournalConflictError(streamId, after, found, `Stream "${streamId}" belongs to another scope.`);
      }
      const next = stream ?? { scope: scope ?? null, updatedAt: 0, frames: [] };
      next.frames.push(...frames.map((f) => ({ seq: f.seq, body: f.body, end: f.end })));
      next.updatedAt = clock.now();
      data.set(streamId, next);
    },
    async read(streamId, after, limit) {
      const frames = data.get(streamId)?.frames ?? [];
      return frames.slice(after, after + readLimit(limit)).map((f) => ({ ...f }));
    },
    async prune({ before }) {
      let pruned = 0;
      for (const [id, stream] of data) {
        if (stream.updatedAt < before && data.delete(id)) pruned += 1;
      }
      return pruned;
    },
  };
}

// A ten-line runner. Under vitest, jest or node:test, pass their own describe and it instead.
const cases: { name: string; run: () => Promise<void> }[] = [];
const path: string[] = [];
const api: ConformanceTestApi = {
  describe(name, body) {
    path.push(name);
    body();
    path.pop();
  },
  it(name, run) {
    cases.push({ name: [...path, name].join(' > '), run });
  },
};

for (const checkScope of [true, false]) {
  defineJournalConformance({
    name: checkScope ? 'map' : 'map without the scope check',
    async create() {
      const data = new Map<string, Stream>();
      const clock = createManualClock();
      // Two objects over one map: the race cases append through several at once.
      return {
        journal: createMapJournal(data, clock, { checkScope }),
        reopen: async () => createMapJournal(data, clock, { checkScope }),
        advance: async (ms) => clock.advance(ms),
      };
    },
  }, api);
}

let passed = 0;
for (const { name, run } of cases) {
  try {
    await run();
    passed += 1;
  } catch {
    console.log(`failed: ${name}`);
  }
}
console.log(`${passed} of ${cases.length} cases passed`);
