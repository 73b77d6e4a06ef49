/**
 * The swarm's shared ledger across restarts. The swarm record keeps the
 * ledger as its last save found it, and every task's run record keeps its own
 * slice as that run's last save found it; either may be the later word on an
 * entry. A resume restores, for each entry, the most settled copy any of them
 * holds (committed or released over unknown over reserved), so no budget is
 * reset and no spend counted twice.
 */
import { totalsOf } from '../policy/ledger.js';
import type { ExecutionContext, LedgerEntry } from '../policy/index.js';

const RANK: Record<LedgerEntry['status'], number> = { reserved: 1, unknown: 2, committed: 3, released: 3 };

export function mergeEntries(lists: ReadonlyArray<readonly LedgerEntry[]>): LedgerEntry[] {
  const byId = new Map<string, LedgerEntry>();
  for (const list of lists) {
    for (const entry of list) {
      const held = byId.get(entry.id);
      if (!held || RANK[entry.status] > RANK[held.status]) byId.set(entry.id, entry);
    }
  }
  return [...byId.values()];
}

/** True when a ceiling on the swarm's path has nothing left: no task could be admitted. */
export async function budgetSpent(execution: ExecutionContext): Promise<boolean> {
  const ceilings = execution.policy.ceilings;
  if (ceilings.length === 0) return false;
  const entries = await execution.ledger.entries(execution.path);
  return ceilings.some((ceiling) => {
    const t = totalsOf(entries, ceiling.scope);
    const usd = t.committed.usd + t.reserved.usd + t.unknown.usd;
    const tokens = t.committed.tokens + t.reserved.tokens + t.unknown.tokens;
    return (ceiling.usd !== undefined && usd >= ceiling.usd - 1e-12) || (ceiling.tokens !== undefined && tokens >= ceiling.tokens);
  });
}
