import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createAgentStream, type AgentStream } from '../../src/agent/stream.js';
import type { AgentEvent, AgentResult } from '../../src/agent/types.js';

type Event = AgentEvent<unknown>;
type Step = Event | 'tick' | Gate;

/** Holds a scripted run at a point until the test opens it. */
class Gate {
  open!: () => void;
  readonly passed = new Promise<void>((resolve) => {
    this.open = resolve;
  });
}

function resultOf(output: unknown, text = ''): AgentResult<unknown> {
  return {
    status: 'completed',
    output,
    runId: 'run-1',
    messages: [],
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    steps: 1,
    accounting: { spent: { inputTokens: 0, outputTokens: 0, usd: null }, reserved: { usd: 0, tokens: 0 }, committed: { usd: 0, tokens: 0 }, unknown: { usd: 0, tokens: 0 } },
    text,
    warnings: [],
  };
}

const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/** A fake engine: emits the scripted events with awaits between them, then the result. */
function scripted(steps: Step[], result = resultOf(null)) {
  return vi.fn(async (emit: (event: Event) => void) => {
    for (const step of steps) {
      if (step === 'tick') await tick();
      else if (step instanceof Gate) await step.passed;
      else emit(step);
    }
    emit({ type: 'result', result });
    return result;
  });
}

/** Text deltas of one finalization step, cut into chunks of `size` characters, with a tick after each. */
function finalizeStep(step: number, text: string, size: number): Step[] {
  const out: Step[] = [{ type: 'step-start', step, phase: 'finalize' }];
  for (let i = 0; i < text.length; i += size) out.push({ type: 'text-delta', step, delta: text.slice(i, i + size) }, 'tick');
  return out;
}

async function collect<V>(iterable: AsyncIterable<V>): Promise<V[]> {
  const out: V[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

const runStart: Event = { type: 'run-start', runId: 'run-1', resumed: false };

describe('createAgentStream', () => {
  let unhandled: unknown[];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  beforeEach(() => {
    unhandled = [];
    process.on('unhandledRejection', onUnhandled);
  });
  afterEach(() => {
    process.off('unhandledRejection', onUnhandled);
  });

  it('starts nothing until the result, a view or consume() is used, and then starts once', async () => {
    for (const use of [
      (s: AgentStream<unknown>) => void s.result,
      (s: AgentStream<unknown>) => void s.consume(),
      (s: AgentStream<unknown>) => void s.events[Symbol.asyncIterator]().next(),
      (s: AgentStream<unknown>) => void s.textStream[Symbol.asyncIterator]().next(),
      (s: AgentStream<unknown>) => void s.partialOutputStream[Symbol.asyncIterator]().next(),
      (s: AgentStream<unknown>) => void s.elementStream[Symbol.asyncIterator]().next(),
    ]) {
      const start = scripted([runStart, 'tick']);
      const stream = createAgentStream(start);
      // Reaching for a view is not iterating it.
      void stream.events;
      void stream.textStream;
      await tick();
      expect(start).not.toHaveBeenCalled();
      use(stream);
      expect(start).toHaveBeenCalledTimes(1);
      await collect(stream.events);
      await stream.consume();
      await stream.result;
      expect(start).toHaveBeenCalledTimes(1);
    }
  });

  it('ends the events with the result, and resolves the result with it', async () => {
    const result = resultOf(null, 'Hello');
    const stream = createAgentStream(scripted([
      runStart, 'tick',
      { type: 'step-start', step: 0, phase: 'loop' },
      { type: 'text-delta', step: 0, delta: 'Hel' }, 'tick',
      { type: 'text-delta', step: 0, delta: 'lo' },
      { type: 'warning', setting: 'temperature', message: 'ignored' },
    ], result));
    const events = await collect(stream.events);
    expect(events.map((e) => e.type)).toEqual(['run-start', 'step-start', 'text-delta', 'text-delta', 'warning', 'result']);
    expect(events.at(-1)).toEqual({ type: 'result', result });
    expect(await stream.result).toBe(result);
    expect(await collect(stream.textStream)).toEqual(['Hel', 'lo']);
  });

  it('lets several views read the run concurrently, each from the start', async () => {
    const gate = new Gate();
    const start = scripted([
      runStart,
      { type: 'step-start', step: 0, phase: 'loop' },
      { type: 'text-delta', step: 0, delta: 'a' },
      gate,
      { type: 'text-delta', step: 0, delta: 'b' }, 'tick',
      { type: 'text-delta', step: 0, delta: 'c' },
    ]);
    const stream = createAgentStream(start);
    const first = collect(stream.events);
    const text = collect(stream.textStream);
    await tick();
    // A view that joins mid-run replays what it missed.
    const late = collect(stream.events);
    gate.open();
    const [a, b, t] = await Promise.all([first, late, text]);
    expect(a.map((e) => e.type)).toEqual(['run-start', 'step-start', 'text-delta', 'text-delta', 'text-delta', 'result']);
    expect(b).toEqual(a);
    expect(t).toEqual(['a', 'b', 'c']);
    expect(start).toHaveBeenCalledTimes(1);
  });

  it('replays the whole run to views read after it ended, as often as asked', async () => {
    const stream = createAgentStream(scripted([runStart, 'tick', { type: 'step-start', step: 0, phase: 'loop' }]));
    const result = await stream.consume();
    const events = stream.events;
    const once = await collect(events);
    const twice = await collect(events);
    const fresh = await collect(stream.events);
    expect(once.map((e) => e.type)).toEqual(['run-start', 'step-start', 'result']);
    expect(twice).toEqual(once);
    expect(fresh).toEqual(once);
    expect(once.at(-1)).toEqual({ type: 'result', result });
  });

  it('leaves other views alone when one stops early', async () => {
    const stream = createAgentStream(scripted([
      runStart, 'tick', { type: 'step-start', step: 0, phase: 'loop' }, 'tick', { type: 'step-start', step: 1, phase: 'loop' },
    ]));
    const all = collect(stream.events);
    for await (const event of stream.events) {
      expect(event.type).toBe('run-start');
      break;
    }
    expect((await all).map((e) => e.type)).toEqual(['run-start', 'step-start', 'step-start', 'result']);
  });

  it('runs to the end with consume() alone', async () => {
    const start = scripted([runStart, 'tick', 'tick']);
    const stream = createAgentStream(start);
    const result = await stream.consume();
    expect(result.status).toBe('completed');
    expect(start).toHaveBeenCalledTimes(1);
  });

  it('emits the returned result when start resolves without emitting one, and drops events after the result', async () => {
    const result = resultOf(1);
    const stream = createAgentStream<unknown>(async (emit) => {
      emit(runStart);
      await tick();
      return result;
    });
    expect((await collect(stream.events)).map((e) => e.type)).toEqual(['run-start', 'result']);

    const other = resultOf(2);
    const chatty = createAgentStream<unknown>(async (emit) => {
      emit({ type: 'result', result });
      emit({ type: 'result', result: other });
      emit(runStart);
      return other;
    });
    expect(await collect(chatty.events)).toEqual([{ type: 'result', result }]);
    expect(await chatty.result).toBe(result);
  });

  it('turns a rejecting start into an error part, and rejects the result', async () => {
    const failure = new Error('engine broke: api_key=sk-abcdefghijklmnop');
    const stream = createAgentStream<unknown>(async (emit) => {
      emit(runStart);
      emit({ type: 'text-delta', step: 0, delta: 'x' });
      await tick();
      throw failure;
    });
    const text = collect(stream.textStream);
    const events = await collect(stream.events);
    expect(events.map((e) => e.type)).toEqual(['run-start', 'text-delta', 'error']);
    const error = events.at(-1) as Extract<Event, { type: 'error' }>;
    expect(error.error).toMatchObject({ name: 'Error', code: 'internal' });
    expect(error.error.message).not.toContain('sk-abcdefghijklmnop');
    expect(await text).toEqual(['x']);
    await expect(stream.result).rejects.toBe(failure);
    await expect(stream.consume()).rejects.toBe(failure);
    expect(await collect(stream.partialOutputStream)).toEqual([]);
  });

  it('turns a start that throws synchronously into an error part too', async () => {
    const stream = createAgentStream<unknown>(() => {
      throw new TypeError('not even async');
    });
    expect(await collect(stream.events)).toEqual([
      { type: 'error', error: { name: 'TypeError', code: 'internal', message: 'not even async' } },
    ]);
    await expect(stream.result).rejects.toThrow('not even async');
  });

  it('raises no unhandled rejection when nobody awaits the result of a failed run', async () => {
    const stream = createAgentStream<unknown>(async () => {
      await tick();
      throw new Error('nobody listens');
    });
    void stream.result; // started, never awaited
    const other = createAgentStream<unknown>(async () => {
      throw new Error('read through events only');
    });
    await collect(other.events);
    await tick();
    await tick();
    expect(unhandled).toEqual([]);
  });

  describe('partialOutputStream', () => {
    const json = '{"name": "Ada", "tags": ["math", "code"], "age": 36}';

    it('yields each new draft of the finalization text, split anywhere', async () => {
      const stream = createAgentStream(scripted([
        runStart,
        { type: 'step-start', step: 0, phase: 'loop' },
        { type: 'text-delta', step: 0, delta: '{"loop": "text is not output"}' }, 'tick',
        ...finalizeStep(1, json, 4),
      ]));
      const drafts = await collect(stream.partialOutputStream);
      expect(drafts[0]).toEqual({});
      expect(drafts.at(-1)).toEqual(JSON.parse(json));
      // Each draft differs from the one before.
      for (let i = 1; i < drafts.length; i++) expect(JSON.stringify(drafts[i])).not.toBe(JSON.stringify(drafts[i - 1]));
      expect(drafts).toContainEqual({ name: 'Ad' });
      expect(drafts).toContainEqual({ name: 'Ada', tags: ['math', 'co'] });
      // A number is shown only once it ended.
      expect(drafts).not.toContainEqual({ name: 'Ada', tags: ['math', 'code'], age: 3 });
    });

    it('starts over when a repair attempt begins', async () => {
      const stream = createAgentStream(scripted([
        runStart,
        ...finalizeStep(0, '{"n": "wrong"}', 5),
        { type: 'output-attempt', attempt: 1, valid: false, issue: 'n must be a number' },
        ...finalizeStep(1, '{"n": 2}', 100),
        { type: 'output-attempt', attempt: 2, valid: true },
      ]));
      expect(await collect(stream.partialOutputStream)).toEqual([
        {}, { n: 'wro' }, { n: 'wrong' },
        { n: 2 },
      ]);
    });

    it('ignores deltas of other steps, and yields nothing in none mode', async () => {
      const steps: Step[] = [
        runStart,
        { type: 'step-start', step: 3, phase: 'finalize' },
        { type: 'text-delta', step: 2, delta: '[1, ' },
        { type: 'text-delta', step: 3, delta: '["x"' }, 'tick',
        { type: 'text-delta', step: 3, delta: ']' },
      ];
      expect(await collect(createAgentStream(scripted(steps)).partialOutputStream)).toEqual([['x']]);
      expect(await collect(createAgentStream(scripted(steps), { outputMode: 'none' }).partialOutputStream)).toEqual([]);
    });

    it('takes the output tool arguments as the draft in tool mode', async () => {
      const stream = createAgentStream(scripted([
        runStart,
        { type: 'step-start', step: 0, phase: 'loop' },
        { type: 'tool-call-start', step: 0, toolCallId: 'c0', toolName: 'search', args: { q: 'x' } },
        { type: 'step-start', step: 1, phase: 'finalize' },
        { type: 'text-delta', step: 1, delta: '{"ignored": true}' },
        { type: 'tool-call-start', step: 1, toolCallId: 'c1', toolName: 'json_output', args: [{ a: 1 }, { a: 2 }] },
      ]), { outputMode: 'tool' });
      expect(await collect(stream.partialOutputStream)).toEqual([[{ a: 1 }, { a: 2 }]]);
      expect(await collect(stream.elementStream)).toEqual([{ a: 1 }, { a: 2 }]);
    });
  });

  describe('elementStream', () => {
    it('yields each array element once, when it is whole', async () => {
      const gate = new Gate();
      const stream = createAgentStream(scripted([
        runStart,
        ...finalizeStep(0, '[{"a":1},{"a":', 2),
        gate,
        ...finalizeStep(0, '2}]', 2).slice(1),
      ]));
      const seen: unknown[] = [];
      const reading = (async () => {
        for await (const element of stream.elementStream) seen.push(element);
      })();
      for (let i = 0; i < 20; i++) await tick();
      // The first element closed; the second has not.
      expect(seen).toEqual([{ a: 1 }]);
      gate.open();
      await reading;
      expect(seen).toEqual([{ a: 1 }, { a: 2 }]);
    });

    it.each([1, 2, 3, 5])('gives the same elements whatever the chunk size (%i)', async (size) => {
      const stream = createAgentStream(scripted([runStart, ...finalizeStep(0, '[{"a":1},{"a":2}]', size)]));
      expect(await collect(stream.elementStream)).toEqual([{ a: 1 }, { a: 2 }]);
    });

    it('yields the elements of a number array once each number ended', async () => {
      const stream = createAgentStream(scripted([runStart, ...finalizeStep(0, '[10, 20, 30]', 1)]));
      expect(await collect(stream.elementStream)).toEqual([10, 20, 30]);
    });

    it('starts over on a repair attempt, so elements of the abandoned attempt have been yielded', async () => {
      const stream = createAgentStream(scripted([
        runStart,
        ...finalizeStep(0, '[{"a":1},{"a":"x"}]', 3),
        { type: 'output-attempt', attempt: 1, valid: false },
        ...finalizeStep(1, '[{"a":1},{"a":2}]', 3),
      ]));
      expect(await collect(stream.elementStream)).toEqual([{ a: 1 }, { a: 'x' }, { a: 1 }, { a: 2 }]);
    });

    it('yields nothing when the output is not an array', async () => {
      const stream = createAgentStream(scripted([runStart, ...finalizeStep(0, '{"items": [1, 2]}', 3)]));
      expect(await collect(stream.elementStream)).toEqual([]);
    });
  });
});
