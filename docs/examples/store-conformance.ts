// Validate your own store: the conformance suite needs only a describe and an it.
import { RevisionConflictError, RunIdentityError, type AgentRunEnvelope, type AgentRunStore } from 'cairn/agent';
import { validateAgentRunStore, type ConformanceTestApi } from 'cairn/testing';

/** A store over a map of JSON strings, the way a key-value backend keeps runs. */
function createKeyValueStore(data: Map<string, string>, options = { checkScope: true }): AgentRunStore {
  return {
    async load(runId, { scope } = {}) {
      const json = data.get(runId);
      if (json === undefined) return undefined;
      const envelope = JSON.parse(json) as AgentRunEnvelope;
      if (options.checkScope && scope !== undefined && envelope.scope !== scope) {
        throw new RunIdentityError('scope_mismatch', runId);
      }
      return envelope;
    },
    async save(envelope) {
      const json = JSON.stringify(envelope);
      const stored = data.get(envelope.runId);
      const storedRevision = stored === undefined ? null : (JSON.parse(stored) as AgentRunEnvelope).revision;
      if (envelope.revision !== (storedRevision ?? 0) + 1) {
        throw new RevisionConflictError(envelope.runId, envelope.revision - 1, storedRevision);
      }
      data.set(envelope.runId, json);
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
  const data = new Map<string, string>();
  validateAgentRunStore({
    name: checkScope ? 'key-value' : 'key-value without the scope check',
    // This store has no list or prune: those cases are left out.
    features: { list: false, prune: false },
    async create() {
      data.clear();
      // Two objects over one map: the race cases save through several at once.
      return { store: createKeyValueStore(data, { checkScope }), reopen: async () => createKeyValueStore(data, { checkScope }) };
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
