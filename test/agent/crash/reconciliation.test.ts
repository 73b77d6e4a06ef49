/**
 * retryToolCallIds and reconciledToolResults: what a resume accepts, and how
 * each settles an interrupted call. The interruption is a simulated crash
 * right after both tools of a step ran, before either result was recorded.
 */
import { describe, expect, it } from 'vitest';
import { resumeAgent } from 'cairn/agent';
import { interrupted, scenario } from './interrupted-run.js';

describe('reconciliation of interrupted calls', () => {
  it('a resume stops, writes nothing, and lists every interrupted call', async () => {
    const { store, ledger } = await interrupted();
    expect(ledger.entries()).toEqual({ 'charge@0:c1': 1, 'email@0:c2': 1 });
    const before = JSON.stringify(await store.load('order-7'));
    const resumed = await resumeAgent(scenario(store, ledger));
    expect(resumed.status).toBe('stopped');
    if (resumed.status !== 'stopped') return;
    expect(resumed.reason).toBe('tool-reconciliation-required');
    expect(resumed.unknownEffects?.map((r) => r.toolCallId).sort()).toEqual(['c1', 'c2']);
    expect(JSON.stringify(await store.load('order-7'))).toBe(before);
  });

  it('refuses with a TypeError, before anything is written: duplicates, both lists, a recorded result for another call, bad shapes', async () => {
    const { store, ledger } = await interrupted();
    const before = JSON.stringify(await store.load('order-7'));
    const refused = [
      { reconciledToolResults: [{ toolCallId: 'nope', output: 'x' }] },
      { retryToolCallIds: ['c1', 'c1'] },
      { retryToolCallIds: ['c1'], reconciledToolResults: [{ toolCallId: 'c1', output: 'x' }] },
      { reconciledToolResults: [{ toolCallId: 'c2' }] },
      { retryToolCallIds: 'c1' },
    ];
    for (const lists of refused) {
      const result = await resumeAgent({ ...scenario(store, ledger), ...(lists as object) });
      expect(result.status, JSON.stringify(lists)).toBe('failed');
      if (result.status === 'failed') expect(result.error.name, JSON.stringify(lists)).toBe('TypeError');
    }
    expect(JSON.stringify(await store.load('order-7'))).toBe(before);
    expect(ledger.total()).toBe(2);
  });

  it('ignores, with a warning, a retry id that names no interrupted call', async () => {
    const { store, ledger } = await interrupted();
    const before = JSON.stringify(await store.load('order-7'));
    const resumed = await resumeAgent({ ...scenario(store, ledger), retryToolCallIds: ['nope'] });
    expect(resumed.status).toBe('stopped');
    if (resumed.status === 'stopped') expect(resumed.reason).toBe('tool-reconciliation-required');
    expect(resumed.warnings).toEqual([expect.objectContaining({ setting: 'retryToolCallIds', toolCallId: 'nope' })]);
    expect(JSON.stringify(await store.load('order-7'))).toBe(before);
    expect(ledger.total()).toBe(2);
  });

  it('a call left unsettled stops the resume again, records nothing, and lists every call still unknown', async () => {
    const { store, ledger } = await interrupted();
    const before = JSON.stringify(await store.load('order-7'));
    const resumed = await resumeAgent({ ...scenario(store, ledger), reconciledToolResults: [{ toolCallId: 'c1', output: { charged: true } }] });
    expect(resumed.status).toBe('stopped');
    if (resumed.status === 'stopped') expect(resumed.unknownEffects?.map((r) => r.toolCallId).sort()).toEqual(['c1', 'c2']);
    expect(JSON.stringify(await store.load('order-7'))).toBe(before);
  });

  it('reconciled and retried calls settle in one resume; a reconciled output flows through the projection', async () => {
    const { store, ledger } = await interrupted();
    const options = scenario(store, ledger);
    const resumed = await resumeAgent({
      ...options,
      reconciledToolResults: [{ toolCallId: 'c1', output: { charged: true } }],
      retryToolCallIds: ['c2'],
    });
    expect(resumed.status).toBe('completed');
    expect(ledger.entries()).toEqual({ 'charge@0:c1': 1, 'email@0:c2': 2 });
    const tools = resumed.messages.filter((m) => m.role === 'tool');
    expect(tools).toEqual([
      { role: 'tool', toolCallId: 'c1', toolName: 'charge', content: { charged: true } },
      { role: 'tool', toolCallId: 'c2', toolName: 'email', content: 'sent' },
    ]);
    const stored = await store.load('order-7');
    expect(stored!.receipts['0:c1']).toMatchObject({ status: 'completed', reconciled: true });
    // A completed run never runs a retried call again.
    const again = await resumeAgent({ ...options, retryToolCallIds: ['c2'] });
    expect(again.status).toBe('completed');
    expect(ledger.count('email@0:c2')).toBe(2);
  });

  it('a reconciled error answers the call with its error', async () => {
    const { store, ledger } = await interrupted();
    const resumed = await resumeAgent({
      ...scenario(store, ledger),
      reconciledToolResults: [
        { toolCallId: 'c1', output: { declined: 'card expired' }, isError: true },
        { toolCallId: 'c2', output: 'sent' },
      ],
    });
    expect(resumed.status).toBe('completed');
    const charge = resumed.messages.find((m) => m.role === 'tool' && m.toolCallId === 'c1');
    expect(charge).toEqual({ role: 'tool', toolCallId: 'c1', toolName: 'charge', content: '{"declined":"card expired"}', isError: true });
    expect(ledger.total()).toBe(2);
  });
});
