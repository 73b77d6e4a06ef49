/**
 * A property over every wire: whatever the chunk boundaries of a streamed
 * answer (an event split anywhere, even inside a UTF-8 line ending), and
 * whatever one fault does to it (nothing; a line that is not JSON put before
 * its last event; the connection cut after any chunk), the call ends in
 * exactly one of the documented ways, after exactly one request:
 *
 * - no fault: the whole turn ("Hi", finish `stop`);
 * - a line that is not JSON: `invalid_response`, not retryable;
 * - a cut: the whole turn when its final event had arrived, otherwise a
 *   retryable APICallError naming the provider and the endpoint, with the
 *   socket's error as its cause; never a bare TypeError.
 *
 * fast-check prints the seed of a failure; FC_SEED replays it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ModelStreamPart } from 'cairn/models';
import { printedSeed } from '../support/fc-seed.js';
import { ask } from './fixtures/openai/harness.js';
import { wireServerForFile } from './wire-server.js';
import { fullStream, sseText, WIRES } from './wire-table.js';

const server = await wireServerForFile();
const NUM_RUNS = 100;

type Fault = { kind: 'none' } | { kind: 'garbage'; at: number } | { kind: 'cut'; after: number };

/** Splits `text` at the given fractions of its length (sorted, deduplicated, never empty pieces). */
function split(text: string, cuts: number[]): string[] {
  const at = [...new Set(cuts.map((f) => Math.floor(f * text.length)).filter((i) => i > 0 && i < text.length))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const i of at) {
    out.push(text.slice(from, i));
    from = i;
  }
  out.push(text.slice(from));
  return out;
}

async function outcome(parts: AsyncIterable<ModelStreamPart>): Promise<{ parts: ModelStreamPart[]; error?: unknown }> {
  const seen: ModelStreamPart[] = [];
  try {
    for await (const part of parts) seen.push(part);
  } catch (error) {
    return { parts: seen, error };
  }
  return { parts: seen };
}

const texts = (parts: ModelStreamPart[]) => parts.flatMap((p) => (p.type === 'text-delta' ? [p.delta] : []));

describe('every wire, any chunking, one fault', () => {
  it(`ends as documented after one request (${NUM_RUNS} runs)`, async () => {
    const seed = printedSeed('wire stream faults');
    const arbitrary = fc.record({
      wire: fc.integer({ min: 0, max: WIRES.length - 1 }),
      cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 8 }),
      crlf: fc.boolean(),
      fault: fc.oneof(
        fc.constant<Fault>({ kind: 'none' }),
        fc.nat().map<Fault>((at) => ({ kind: 'garbage', at })),
        fc.nat().map<Fault>((after) => ({ kind: 'cut', after })),
      ),
    });
    await fc.assert(fc.asyncProperty(arbitrary, async ({ wire: index, cuts, crlf, fault }) => {
      const wire = WIRES[index]!;
      const events = fullStream(wire).map((e) => sseText([e]));
      // A line that is not JSON goes anywhere before the last event (after it the wire has stopped reading).
      if (fault.kind === 'garbage') events.splice(fault.at % events.length, 0, 'data: {"not": json\n\n');
      const text = crlf ? events.join('').replaceAll('\n', '\r\n') : events.join('');
      const chunks = split(text, cuts);
      const after = fault.kind === 'cut' ? fault.after % (chunks.length + 1) : undefined;
      const delivered = chunks.slice(0, after).join('');
      server.requests.length = 0;
      server.reply({ chunks, ...(after !== undefined ? { cutAfter: after } : {}) });

      const { parts, error } = await outcome(wire.make(server.url).doStream!(ask('Hi')));
      expect(server.requests).toHaveLength(1);
      const finished = parts.at(-1)?.type === 'finish';
      if (fault.kind === 'none') {
        expect(error).toBeUndefined();
        expect(texts(parts)).toEqual(['Hi']);
      } else if (fault.kind === 'garbage') {
        expect(error).toMatchObject({ name: 'APICallError', code: 'invalid_response', isRetryable: false });
      } else if (error === undefined) {
        // Only a turn whose closing event had arrived may finish.
        expect(finished).toBe(true);
        expect(texts(parts)).toEqual(['Hi']);
        expect(delivered.length).toBeGreaterThan(text.indexOf(sseText([wire.finish.at(-1)!]).replaceAll('\n', crlf ? '\r\n' : '\n')));
      } else {
        expect(error).toMatchObject({
          name: 'APICallError', code: 'api_call_failed', isRetryable: true, provider: wire.provider, url: wire.streamUrl(server.url),
        });
        expect((error as { cause?: { code?: string } }).cause?.code).toBe('UND_ERR_SOCKET');
        expect(finished).toBe(false);
        expect(['Hi'].slice(0, texts(parts).length)).toEqual(texts(parts));
      }
    }), { numRuns: NUM_RUNS, seed });
  });
});
