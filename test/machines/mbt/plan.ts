/**
 * The plan of the tool-call model-based test: every path the model has, per
 * call input, with the world that drives it through the runtime, or why none does.
 */
import type { ToolCallInput } from '../../../machines/index.js';
import { deriveWorld, type Derived } from './call-scenario.js';
import { INPUT_VARIANTS, callPaths, pathsThroughUnknownEffect, stateName, type CallPath } from './tool-call-model.js';

export interface PlannedPath {
  id: number;
  variant: string;
  input: ToolCallInput;
  path: CallPath;
  derived: Extract<Derived, { kind: 'drive' }>;
}

export interface SkippedPath {
  variant: string;
  path: CallPath;
  kind: 'contract' | 'unreachable';
  reason: string;
}

/** Every path of the model, per call input, with the world that drives it or why none does. */
export function planCallPaths(): { drive: PlannedPath[]; skipped: SkippedPath[] } {
  const drive: PlannedPath[] = [];
  const skipped: SkippedPath[] = [];
  for (const { name, input } of INPUT_VARIANTS) {
    let paths = callPaths(input);
    if (name === 'tool-calls' || name === 'tool-calls, gated') {
      // One prefix of each way into unknownEffect, continued by a recorded outcome.
      const shortest = (pred: (p: CallPath) => boolean) => paths.filter((p) => pred(p) && deriveWorld(p, input).kind === 'drive').sort((a, b) => a.steps.length - b.steps.length)[0];
      const into = (kind: string) => (p: CallPath) =>
        stateName(p.state.value) === 'unknownEffect' && p.steps[p.steps.length - 1]!.event.output?.kind === 'unknown' &&
        p.steps[p.steps.length - 1]!.event.type === `xstate.done.actor.${kind}`;
      const prefixes = [shortest(into('executeTool')), shortest(into('beginEffect'))].filter((p): p is CallPath => p !== undefined);
      paths = [...paths, ...pathsThroughUnknownEffect(input, prefixes)];
    }
    // `stop` dispatches like `tool-calls`: one path shows the gate lets it through.
    if (name === 'stop') {
      paths = paths
        .filter((p) => stateName(p.state.value) === 'completed' && deriveWorld(p, input).kind === 'drive')
        .sort((a, b) => a.steps.length - b.steps.length)
        .slice(0, 1);
    }
    for (const path of paths) {
      const derived = deriveWorld(path, input);
      if (derived.kind === 'drive') drive.push({ id: drive.length + 1, variant: name, input, path, derived });
      else skipped.push({ variant: name, path, kind: derived.kind, reason: derived.reason });
    }
  }
  return { drive, skipped };
}
