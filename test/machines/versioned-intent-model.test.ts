/**
 * Model-based tests of the versioned memory-intent chart: every simple path
 * of its graph (versioned-intent-paths.ts), from a fresh extraction, a fresh
 * tool write and every stored entry a settle starts from, is driven through
 * the real chart with actors that answer as the path says. For each path the
 * output and the order of the durable steps are checked against the protocol
 * (an independent reading of each call and its answer, not of the chart),
 * and together the paths must reach every state and take every transition.
 */
import { describe, expect, it } from 'vitest';
import { versionedIntentMachine, intentEntryOf, intentErrorOf } from '../../machines/memory-intent-versioned.js';
import type { VersionedIntentCommitReceipt, VersionedIntentEntry, VersionedIntentInput } from '../../machines/memory-intent-versioned-types.js';
import { allEdges, edgeOfTransition } from './mbt/edges.js';
import { claimOut, drive, paths, type Call } from './versioned-intent-paths.js';

type Status = VersionedIntentEntry['status'];
const receiptOfAnswer = (c: Call): VersionedIntentCommitReceipt | null | undefined => {
  if (!('output' in c.answer)) return undefined;
  const o = c.answer.output as { receipt?: VersionedIntentCommitReceipt } | VersionedIntentCommitReceipt | null;
  return c.actor === 'commit' ? (o as { receipt: VersionedIntentCommitReceipt }).receipt : (o as VersionedIntentCommitReceipt | null);
};

/**
 * What the protocol allows, read from the calls alone: the claim is saved
 * before any commit, a commit or a read receipt comes before the
 * acknowledgment (which copies the receipt), nothing follows a save that
 * threw, a settled or stalled intent saves once more at most. Answers the
 * status the record holds at the end.
 */
function checkProtocol(input: VersionedIntentInput, calls: Call[]): Status {
  let durable: Status = input.stored?.status ?? 'intended';
  let claim: { messageIds: string[]; requestDigest: string } | null =
    input.stored?.messageIds && input.stored.requestDigest ? { messageIds: input.stored.messageIds, requestDigest: input.stored.requestDigest } : null;
  // A stored committed entry with its receipt is acknowledged with it.
  let receipt: VersionedIntentCommitReceipt | null = input.stored?.status === 'committed' && input.stored.receipt && claim
    ? { requestDigest: claim.requestDigest, planned: input.stored.planned!, ...input.stored.receipt } : null;
  let commits = 0;
  let ended = false;
  for (const [i, call] of calls.entries()) {
    expect(ended, `no call after the intent ended (${call.actor} #${i})`).toBe(false);
    const previous = calls[i - 1];
    const threw = 'error' in call.answer;
    if (call.actor === 'claim') {
      // A claim is built for an intended entry, or again for a stored one that lost it.
      expect(durable === 'intended' || claim === null).toBe(true);
      if (!threw) claim = (call.answer as { output: unknown }).output as typeof claim;
    } else if (call.actor === 'readReceipt') {
      expect(i, 'a settle reads the receipt first').toBe(0);
      expect(['planned', 'committed']).toContain(durable);
      expect(call.input).toEqual({ operationId: 'op-1', requestDigest: claim!.requestDigest });
      const r = receiptOfAnswer(call);
      if (r) receipt = r;
    } else if (call.actor === 'commit') {
      // The claim is durable before the commit (a stored committed entry without its receipt commits again).
      expect(['planned', 'committed'], 'the claim is durable before the commit').toContain(durable);
      expect(i === 0 || previous?.actor !== 'claim', 'the claim is saved before the commit').toBe(true);
      expect(receipt, 'a receipt read back is never committed again').toBeNull();
      expect(call.input).toEqual({ operationId: 'op-1', ...claim });
      commits += 1;
      const r = receiptOfAnswer(call);
      if (r) receipt = r;
    } else {
      const entry = call.input.entry as VersionedIntentEntry;
      expect(call.input.operationId).toBe('op-1');
      // The snapshot a host keeps with the save names the same entry.
      expect(call.entryAtCall).toEqual(entry);
      if (entry.status === 'planned' && entry.error === undefined && previous?.actor === 'claim') {
        expect(entry).toEqual({ operationId: 'op-1', kind: 'extract', status: 'planned', ...claimOut });
      } else if (entry.status === 'acknowledged') {
        expect(receipt, 'an acknowledgment follows a receipt').not.toBeNull();
        expect(receipt!.requestDigest).toBe(claim!.requestDigest);
        expect(entry).toEqual({
          operationId: 'op-1', kind: 'extract', status: 'acknowledged', messageIds: claim!.messageIds,
          requestDigest: receipt!.requestDigest, planned: receipt!.planned,
          receipt: { scopeRevision: receipt!.scopeRevision, committedAt: receipt!.committedAt },
        });
        ended = true;
      } else if (entry.status === 'failed') {
        expect(entry.error?.code).toBe('memory_receipt_mismatch');
        ended = true;
      } else {
        // A stall: the status stays, the error of the call that threw is saved.
        expect(entry.status).toBe(durable);
        expect(previous && 'error' in previous.answer).toBe(true);
        expect(entry.error).toEqual(intentErrorOf((previous!.answer as { error: unknown }).error));
        ended = true;
      }
      if (threw) ended = true;
      else durable = entry.status;
    }
    if (threw && call.actor !== 'saveIntent') {
      // Whatever threw, the next call (if any) saves why.
      const next = calls[i + 1];
      if (next) expect(next.actor).toBe('saveIntent');
    }
  }
  expect(commits).toBeLessThanOrEqual(1);
  return durable;
}

describe('versioned memory-intent chart: every path of its graph', () => {
  const taken = new Set<string>();
  const reached = new Set<string>();
  const inspect = (e: unknown) => {
    const ev = e as { type: string; snapshot?: { value: unknown }; _transitions?: never[] };
    if (ev.type !== '@xstate.microstep') return;
    for (const t of ev._transitions ?? []) {
      const edge = edgeOfTransition(t);
      taken.add(edge.key);
      reached.add(edge.source.replace(/^versionedIntent\./, ''));
    }
    const v = ev.snapshot!.value;
    reached.add(typeof v === 'string' ? v : Object.entries(v as object).map(([k, c]) => `${k}.${String(c)}`)[0]!);
  };

  it('has paths to every final state', () => {
    expect(paths.length).toBeGreaterThan(30);
    expect([...new Set(paths.map((p) => p.end))].sort()).toEqual(['acknowledged', 'failed', 'stalled', 'unsaved']);
  });

  for (const [index, path] of paths.entries()) {
    it(`#${index} ${path.label}`, async () => {
      const run = drive(path, { inspect });
      await run.done;
      const end = run.actor.getSnapshot();
      const key = typeof end.value === 'string' ? end.value : JSON.stringify(end.value);
      expect(key).toBe(path.end);
      const output = end.output!;
      expect(output).toEqual(intentEntryOf(end));
      expect(JSON.parse(JSON.stringify(output))).toEqual(output);
      expect(output.operationId).toBe('op-1');
      const durable = checkProtocol(path.input, run.calls);
      if (path.input.kind === 'tool') expect(run.calls).toEqual([]);
      else expect(output.status).toBe(durable);
      if (path.end === 'acknowledged') {
        expect(output.status).toBe('acknowledged');
        expect(output.error).toBeUndefined();
        expect(output.receipt).toEqual({ scopeRevision: 7, committedAt: 1_000 });
        expect(output.planned).toBe(2);
      }
      if (path.end === 'failed') {
        expect(output.status).toBe('failed');
        expect(output.error).toBeDefined();
      }
      if (path.end === 'stalled') {
        expect(output.status).not.toMatch(/acknowledged|failed/);
        expect(output.error).toBeDefined();
      }
      if (path.end === 'unsaved') {
        expect(output.error).toMatchObject({ name: 'StoreError', code: 'store_unavailable' });
        expect(run.calls.at(-1)?.actor).toBe('saveIntent');
      }
    });
  }

  it('reaches every state and takes every transition of the chart', () => {
    const states: string[] = [];
    const walk = (node: { key: string; path: string[]; states: Record<string, unknown> }) => {
      for (const child of Object.values(node.states) as (typeof node)[]) {
        if (Object.keys(child.states).length === 0) states.push(child.path.join('.'));
        walk(child);
      }
    };
    walk(versionedIntentMachine.root as never);
    expect(states.filter((s) => !reached.has(s))).toEqual([]);
    expect(allEdges(versionedIntentMachine).map((e) => e.key).filter((k) => !taken.has(k))).toEqual([]);
  });
});
