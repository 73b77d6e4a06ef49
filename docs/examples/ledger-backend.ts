// A budget ledger of your own, checked by the ledger conformance suite: one over a Map, and one that decides after an await.
import { decideAdmission, type BudgetLedger, type LedgerEntry } from 'cairn/policy';
import { defineLedgerConformance, type ConformanceTestApi } from 'cairn/testing';

function createMapLedger(data: Map<string, LedgerEntry>, options = { atomic: true }): BudgetLedger {
  const copy = (e: LedgerEntry): LedgerEntry => ({ ...e, estimate: { ...e.estimate } });
  return {
    name: 'map',
    async admit(request) {
      const held = data.get(request.id);
      if (held) return { admitted: true, entry: copy(held) };
      const entries = [...data.values()];
      // A database reads the entries and inserts in one transaction; an await in between lets another admission read the same totals.
      if (!options.atomic) await new Promise((resolve) => setTimeout(resolve, 1));
      const decision = decideAdmission(entries, request);
      if (decision.admitted) data.set(request.id, copy(decision.entry));
      return decision;
    },
    async settle(id, outcome) {
      const entry = data.get(id);
      if (!entry || entry.status === 'committed' || entry.status === 'released') return;
      if (outcome.status === 'committed') data.set(id, { ...entry, status: 'committed', usd: outcome.usd, tokens: outcome.tokens });
      else if (outcome.status === 'released') data.set(id, { ...entry, status: 'released', usd: 0, tokens: 0 });
      else data.set(id, { ...entry, status: 'unknown' });
    },
    async entries(scope) {
      return [...data.values()].filter((e) => scope === undefined || e.scope === scope || e.scope.startsWith(`${scope}/`)).map(copy);
    },
    async restore(entries) {
      for (const entry of entries) if (!data.has(entry.id)) data.set(entry.id, copy(entry));
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

for (const atomic of [true, false]) {
  defineLedgerConformance({
    name: atomic ? 'map' : 'map deciding after an await',
    async create() {
      const data = new Map<string, LedgerEntry>();
      // Two objects over one map: the race cases admit through several at once.
      return { ledger: createMapLedger(data, { atomic }), reopen: async () => createMapLedger(data, { atomic }) };
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
