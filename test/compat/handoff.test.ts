/**
 * The handoff records of the compatibility corpus (corpus/handoff-v<N>/,
 * written by generate-handoff.ts): runs that triage handed to billing, put
 * back into a fresh store (in memory, and a SQLite file) and resumed by the
 * current code with the same agents. What a user relies on is checked: the
 * resume goes on with billing (triage's model is never asked again), an
 * approved refund runs once, a transient failure after the handoff is retried
 * with billing, a completed run answers from its record.
 *
 * The files are never edited (see corpus/README.md).
 */
import { describe, expect, it } from 'vitest';
import { resumeAgent, type AgentRunEnvelope, type ResumeOptions } from 'cairn/agent';
import { WRITTEN_AT } from './corpus-agent.js';
import { corpusFolders, corpusStores, readCorpusFile } from './corpus-stores.js';
import { handoffLeg, TURNS, type HandoffEffects } from './handoff-agent.js';

const folders = corpusFolders(/^handoff-v\d+$/);
const read = (folder: string, name: string) => readCorpusFile(folder, `${name}.json`) as AgentRunEnvelope;
const STORES = corpusStores('cairn-corpus-handoff-');

describe.each(folders)('%s', (folder) => {
  describe.each(STORES)('on a $name', (kind) => {
    const leg = async (name: string, billing: Parameters<typeof handoffLeg>[0]['billing'], extra: Partial<ResumeOptions> = {}) => {
      const envelope = read(folder, name);
      expect(envelope.activeAgent).toBe('billing');
      const store = await kind.open(envelope);
      const effects: HandoffEffects = { refunds: [], lookups: [] };
      const options = handoffLeg({ effects, runId: envelope.runId, store, triage: [], billing, now: WRITTEN_AT + 60_000, idPrefix: 'resume' });
      const result = await resumeAgent({ ...options, ...extra });
      return { envelope, effects, result, record: (await store.load(envelope.runId, { scope: envelope.scope }))! };
    };

    it('suspended at billing\'s refund: the approval runs the refund once and billing answers', async () => {
      const envelope = read(folder, 'suspended-approval');
      const [pending] = envelope.pendingApprovals;
      const { effects, result, record } = await leg('suspended-approval', [TURNS.done], {
        approvalResponses: [{ approvalId: pending!.approvalId, token: pending!.token, approved: true }],
      });
      expect(result).toMatchObject({ status: 'completed', text: 'Order 7 is refunded.' });
      expect(effects).toEqual({ refunds: ['7'], lookups: [] });
      expect(record.activeAgent).toBe('billing');
    });

    it('failed for a transient cause after the handoff: retryFailed goes on with billing', async () => {
      const { effects, result } = await leg('failed-after-handoff', [TURNS.lookup, TURNS.done], { retryFailed: true });
      expect(result).toMatchObject({ status: 'completed', text: 'Order 7 is refunded.' });
      expect(effects.lookups).toEqual(['7']);
    });

    it('completed: the stored result, with no model call', async () => {
      const { result, effects } = await leg('completed', []);
      expect(result).toMatchObject({ status: 'completed', text: 'Order 7 is refunded.' });
      expect(effects).toEqual({ refunds: [], lookups: [] });
    });
  });
});
