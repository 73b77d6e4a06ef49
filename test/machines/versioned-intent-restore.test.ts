/**
 * A persisted snapshot of the versioned memory-intent chart, taken wherever
 * it rests on any path of its graph, restores (JSON round trip, then
 * `createActor(machine, { snapshot })`) and goes on to the same final state
 * with the same output. Where it rested in an invoke, the restored chart
 * calls the same actor with the same input again (XState restarts an
 * unsettled invoke), which is why every actor of the chart is safe to repeat.
 */
import { createActor } from 'xstate';
import { describe, expect, it } from 'vitest';
import { versionedIntentMachine, intentEntryOf } from '../../machines/memory-intent-versioned.js';
import { drive, paths, until } from './versioned-intent-paths.js';

const stateKey = (value: unknown) => typeof value === 'string' ? value : Object.entries(value as object).map(([k, v]) => `${k}.${String(v)}`)[0]!;

describe('versioned memory-intent chart: a snapshot taken where it rests restores and ends the same', () => {
  const restoredAt = new Set<string>();

  for (const [index, path] of paths.entries()) {
    it(`#${index} ${path.label}`, async () => {
      const full = drive(path);
      await full.done;
      const end = full.actor.getSnapshot();

      for (let j = 0; j <= path.events.length; j += 1) {
        const first = drive(path, { stopAfter: j });
        await until(() => first.resting(), `rest after ${j} answers`);
        const persisted = JSON.parse(JSON.stringify(first.actor.getPersistedSnapshot()));
        first.actor.stop();
        const at = stateKey(persisted.value);
        restoredAt.add(at);
        // The stored entry a host keeps beside the snapshot is the chart's view of it.
        expect(intentEntryOf(persisted)).toEqual(intentEntryOf(first.actor.getSnapshot()));

        if (persisted.status === 'done') {
          const restored = createActor(versionedIntentMachine, { snapshot: persisted, input: path.input });
          restored.start();
          expect(restored.getSnapshot().status).toBe('done');
          expect(restored.getSnapshot().output).toEqual(end.output);
          continue;
        }
        const again = drive({ input: path.input, events: path.events.slice(j) }, { snapshot: persisted });
        await again.done;
        expect(stateKey(again.actor.getSnapshot().value), `restored at ${at}`).toBe(path.end);
        expect(again.actor.getSnapshot().output, `restored at ${at}`).toEqual(end.output);
        const held = first.held();
        if (held) {
          // The step in flight is made again, the same way.
          expect(again.calls[0]?.actor).toBe(held.actor);
          expect(again.calls[0]?.input).toEqual(held.input);
        }
        // Nothing is done twice beyond that step: the calls are the full run's from there on.
        expect(again.calls.map((c) => [c.actor, c.input])).toEqual(full.calls.slice(full.calls.length - again.calls.length).map((c) => [c.actor, c.input]));
      }
    });
  }

  it('restores at every state the chart rests in', () => {
    const resting = [
      'extract.intended', 'extract.claiming', 'extract.planned', 'extract.reading', 'extract.acknowledging', 'extract.failing',
      'extract.stalling', 'tool.intended', 'tool.committed', 'acknowledged', 'failed', 'stalled', 'unsaved',
    ];
    expect(resting.filter((s) => !restoredAt.has(s))).toEqual([]);
  });
});
