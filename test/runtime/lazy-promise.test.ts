/**
 * The runtime's promise actor logic (src/runtime/lazy-promise.ts) behaves as
 * xstate's fromPromise does, with the actor's signal made only when read.
 */
import { describe, expect, it } from 'vitest';
import { createActor, createMachine, fromPromise, toPromise } from 'xstate';
import { fromLazyPromise } from '../../src/runtime/lazy-promise.js';

const reads = () => {
  let n = 0;
  const desc = Object.getOwnPropertyDescriptor(AbortController.prototype, 'signal')!;
  Object.defineProperty(AbortController.prototype, 'signal', { ...desc, get() { n++; return desc.get!.call(this); } });
  return { count: () => n, restore: () => Object.defineProperty(AbortController.prototype, 'signal', desc) };
};

describe('fromLazyPromise', () => {
  it('resolves and rejects as fromPromise does, with the same snapshots', async () => {
    type Make = <O, I>(body: (args: { input: I }) => Promise<O>) => ReturnType<typeof fromPromise<O, I>>;
    for (const make of [fromPromise as Make, fromLazyPromise as Make]) {
      const ok = createActor(make<number, number>(async ({ input }) => input * 2), { input: 21 });
      ok.start();
      await expect(toPromise(ok)).resolves.toBe(42);
      expect(ok.getSnapshot()).toMatchObject({ status: 'done', output: 42, input: undefined });
      const bad = createActor(make<never, undefined>(async () => { throw new Error('no'); }), { input: undefined });
      bad.subscribe({ error: () => undefined });
      bad.start();
      await expect(toPromise(bad)).rejects.toThrow('no');
      expect(bad.getSnapshot()).toMatchObject({ status: 'error', input: undefined });
    }
  });

  it('makes no signal for a body that does not read it, and one for a body that does', async () => {
    const counter = reads();
    try {
      const quiet = createActor(fromLazyPromise(async () => 1));
      quiet.start();
      await toPromise(quiet);
      expect(counter.count()).toBe(0);
      const reading = createActor(fromLazyPromise(async ({ signal }) => signal.aborted));
      reading.start();
      await expect(toPromise(reading)).resolves.toBe(false);
      expect(counter.count()).toBe(1);
    } finally {
      counter.restore();
    }
  });

  it('aborts the signal when the actor is stopped, whether it was read before the stop or after', async () => {
    let early: AbortSignal | undefined;
    let late: (() => AbortSignal) | undefined;
    const never = new Promise<never>(() => undefined);
    const machine = createMachine({
      initial: 'on',
      states: {
        on: {
          invoke: [{ src: 'early', id: 'early' }, { src: 'late', id: 'late' }],
          on: { OFF: 'off' },
        },
        off: {},
      },
    }).provide({
      actors: {
        early: fromLazyPromise(({ signal }) => { early = signal; return never; }),
        late: fromLazyPromise((args) => { late = () => args.signal; return never; }),
      },
    });
    const actor = createActor(machine);
    actor.start();
    expect(early!.aborted).toBe(false);
    actor.send({ type: 'OFF' });
    expect(early!.aborted).toBe(true);
    expect(late!().aborted).toBe(true);
  });

  it('leaves the signal of a settled actor as it was', async () => {
    let read: (() => AbortSignal) | undefined;
    const actor = createActor(fromLazyPromise(async (args) => { read = () => args.signal; return 1; }));
    actor.start();
    await toPromise(actor);
    expect(read!().aborted).toBe(false);
  });
});
