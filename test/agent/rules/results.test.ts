/**
 * What a tool's result may do to a run. A result that cannot be stored (not
 * JSON, or over maxReceiptBytes) is not a failure: the tool ran, its receipt
 * says so, a resume never runs it again, the model is told not to repeat it,
 * and the operator gets a warning. One result never puts more than
 * maxToolResultChars into the model's history. Secrets in a thrown value's
 * code or message are redacted wherever the error goes.
 */
import { describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, streamAgent, type AgentEvent, type AgentTool, type LanguageModel } from 'cairn/agent';
import { createMockModel, type MockTurn } from 'cairn/testing';
import { countingTool, eventsOf, fixedDeps, recordingStore, toolMessages } from './helpers.js';

const callExport: MockTurn = { toolCalls: [{ toolName: 'exportRows', toolCallId: 'c1', args: {} }] };
type End = Extract<AgentEvent, { type: 'tool-call-end' }>;

function exportRun(result: () => unknown, extra: Record<string, unknown> = {}, failOn?: number) {
  const store = recordingStore(failOn === undefined ? {} : { failOn });
  const model = createMockModel({ strict: false, responses: [(r) => (r.messages.some((m) => m.role === 'tool') ? { text: 'Exported.' } : callExport)] });
  const exportRows = countingTool(undefined, { execute: undefined });
  let runs = 0;
  exportRows.execute = () => {
    runs += 1;
    return result();
  };
  const options = {
    model, prompt: 'Export the rows.', tools: { exportRows: exportRows as AgentTool }, deps: fixedDeps(),
    session: { store, runId: 'export-1', scope: 'tenant-a' }, ...extra,
  };
  return { store, model, options, runs: () => runs };
}

const circular = () => {
  const rows: Record<string, unknown> = { count: 3 };
  rows.self = rows;
  return rows;
};

describe('a result that cannot be stored: the tool ran', () => {
  const cases: Array<[string, () => unknown, string, RegExp]> = [
    ['a 10 MB result', () => 'x'.repeat(10_000_000), 'result_too_large',
      /^its JSON is over the receipt's limit of 1048576 bytes \(maxReceiptBytes\)$/],
    ['a circular result', circular, 'result_unstorable', /^it is not JSON \(Converting circular structure to JSON\)$/],
    ['a BigInt', () => ({ total: 10n }), 'result_unstorable', /^it is not JSON \(Do not know how to serialize a BigInt\)$/],
    ['a function', () => () => 'rows', 'result_unstorable', /^it is not JSON \(a function\)$/],
  ];
  for (const [name, result, code, reason] of cases) {
    it(`${name}: recorded as unstorable, the model told not to repeat it, the operator warned`, async () => {
      const { store, model, options, runs } = exportRun(result);
      const events = await eventsOf(streamAgent(options));
      const done = events.find((e) => e.type === 'result')!.result;
      expect(done.status).toBe('completed');
      expect(runs()).toBe(1);
      const receipt = (await store.load('export-1'))!.receipts['0:c1']!;
      expect(receipt).toMatchObject({ status: 'unstorable', error: { name: 'ToolResultError', code } });
      expect(receipt.error!.message).toMatch(reason);
      expect(receipt).not.toHaveProperty('rawResult');
      const told = `The tool ran, but its result could not be stored: ${receipt.error!.message}. Do not call it again for the same purpose.`;
      expect(toolMessages(model.calls[1])).toEqual([{ role: 'tool', toolCallId: 'c1', toolName: 'exportRows', content: told }]);
      // Never reported as a plain failure that invites the model to try again.
      expect(events.find((e): e is End => e.type === 'tool-call-end')).toMatchObject({ outcome: 'unstorable-result', isError: false });
      expect(done.warnings).toEqual([{
        type: 'warning', setting: code === 'result_too_large' ? 'maxReceiptBytes' : 'tools', toolCallId: 'c1',
        message: expect.stringContaining('ran, but its result could not be stored'),
      }]);
      // Nothing of the result was written anywhere.
      expect(Math.max(...store.saved.map((s) => s.length))).toBeLessThan(20_000);
    });
  }

  it('a resume after the unstorable receipt was saved answers from it: the tool does not run again', async () => {
    // Saves: the start, the executing receipt, the unstorable receipt, then the step checkpoint, which fails.
    const { store, options, runs, model } = exportRun(circular, {}, 4);
    const first = await runAgent(options);
    expect(first).toMatchObject({ status: 'failed', error: { code: 'persistence_failed' } });
    expect((await store.load('export-1'))!.receipts['0:c1']).toMatchObject({ status: 'unstorable' });
    const resumed = await resumeAgent(options);
    expect(resumed.status).toBe('completed');
    expect(runs()).toBe(1);
    expect(toolMessages(model.calls.at(-1))[0]!.content).toMatch(/^The tool ran, but its result could not be stored/);
  });

  it('the model always reads the whole "do not call it again", whatever maxToolResultChars is', async () => {
    const { model, options } = exportRun(circular, { maxToolResultChars: 10 });
    await runAgent(options);
    expect(toolMessages(model.calls[1])[0]!.content).toBe(
      'The tool ran, but its result could not be stored: it is not JSON (Converting circular structure to JSON). Do not call it again for the same purpose.',
    );
  });

  it('maxReceiptBytes sets the cap; a result under it is stored as before', async () => {
    const small = exportRun(() => 'y'.repeat(100), { maxReceiptBytes: 64 });
    await runAgent(small.options);
    expect((await small.store.load('export-1'))!.receipts['0:c1']).toMatchObject({ status: 'unstorable', error: { code: 'result_too_large' } });
    const fits = exportRun(() => 'y'.repeat(100), { maxReceiptBytes: 1_000 });
    await runAgent(fits.options);
    expect((await fits.store.load('export-1'))!.receipts['0:c1']).toMatchObject({ status: 'completed', rawResult: 'y'.repeat(100) });
  });
});

describe('maxToolResultChars: what one result puts into the model\'s history', () => {
  it('cuts the text at 100,000 characters by default, with a marker; the receipt keeps the whole result', async () => {
    const rows = 'r'.repeat(150_000);
    const { store, model, options } = exportRun(() => rows);
    const events = await eventsOf(streamAgent(options));
    const marker = '\n[truncated: the result is 150000 characters; only the first 100000 are shown (maxToolResultChars)]';
    const content = toolMessages(model.calls[1])[0]!.content as string;
    expect(content).toBe(`${'r'.repeat(100_000)}${marker}`);
    expect(events.find((e): e is End => e.type === 'tool-call-end')!.output).toBe(content);
    expect((await store.load('export-1'))!.receipts['0:c1']!.rawResult).toBe(rows);
  });

  it('a JSON result is measured and cut as its JSON text; a smaller cap is an option', async () => {
    const { model, options } = exportRun(() => ({ rows: [1, 2, 3, 4, 5] }), { maxToolResultChars: 10 });
    await runAgent(options);
    expect(toolMessages(model.calls[1])[0]!.content).toBe(
      '{"rows":[1\n[truncated: the result is 20 characters; only the first 10 are shown (maxToolResultChars)]',
    );
  });

  it('the caps must be positive whole numbers', async () => {
    for (const extra of [{ maxToolResultChars: 0 }, { maxReceiptBytes: 1.5 }, { maxReceiptBytes: '1MB' }]) {
      const { options, store } = exportRun(() => 'ok', extra);
      expect(await runAgent(options)).toMatchObject({ status: 'failed', error: { code: 'invalid_options' } });
      expect(store.attempts()).toBe(0);
    }
  });
});

describe('redaction holds for every field of a thrown value', () => {
  const SECRET = 'sk-live0123456789abcdef';

  it("a tool that throws a plain object: its message is used (not [object Object]), and its code and message are redacted", async () => {
    const { store, model, options } = exportRun(() => {
      throw { message: `upstream refused token=${SECRET}`, code: SECRET };
    });
    const done = await runAgent(options);
    expect(done.status).toBe('completed');
    const receipt = (await store.load('export-1'))!.receipts['0:c1']!;
    // A code of the tool's own is not kept (it could carry anything): the receipt says the tool failed.
    expect(receipt.error).toEqual({ name: 'Error', code: 'tool_failed', message: 'upstream refused [redacted]' });
    expect(toolMessages(model.calls[1])[0]).toMatchObject({ content: 'upstream refused [redacted]', isError: true });
    expect(await store.dump('export-1')).not.toContain(SECRET);
  });

  it("an Error whose code carries a secret is redacted in the receipt and the model's message", async () => {
    const { store, model, options } = exportRun(() => {
      throw Object.assign(new Error('denied'), { code: `Bearer ${SECRET}` });
    });
    expect((await runAgent(options)).status).toBe('completed');
    expect(toolMessages(model.calls[1])[0]).toMatchObject({ content: 'denied', isError: true });
    expect((await store.load('export-1'))!.receipts['0:c1']!.error).toEqual({ name: 'Error', code: 'tool_failed', message: 'denied' });
    expect(await store.dump('export-1')).not.toContain(SECRET);
  });

  it('a model that throws a plain object with a secret in its message and code fails the run with both redacted', async () => {
    const model: LanguageModel = {
      specificationVersion: 'cairn-model-1', provider: 'acme', modelId: 'broken',
      doGenerate: () => Promise.reject({ message: `gateway said api_key=${SECRET}`, code: `token: ${SECRET}`, name: 'GatewayError' }),
    };
    const store = recordingStore();
    const events = await eventsOf(streamAgent({ model, prompt: 'Hi.', maxRetries: 0, session: { store, runId: 'm-1', scope: 's' }, deps: fixedDeps() }));
    const done = events.find((e) => e.type === 'result')!.result;
    expect(done).toMatchObject({ status: 'failed', error: { name: 'GatewayError', code: 'model_call_failed', message: 'gateway said [redacted]' } });
    expect(JSON.stringify(events)).not.toContain(SECRET);
    expect(await store.dump('m-1')).not.toContain(SECRET);
  });
});
