/**
 * Seeds for the fast-check properties, so every failure can be replayed:
 * FC_SEED=<seed> runs the same cases again, FC_PATH=<path> goes straight to a
 * counterexample's shrunk path.
 */
import type fc from 'fast-check';

/** FC_SEED when set, else a fresh seed; printed (with `what`) so a failure can be run again. */
export function printedSeed(what: string): number {
  const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : Date.now() ^ (Math.random() * 0x7fffffff);
  console.log(`${what}: seed ${seed} (FC_SEED=${seed} replays it)`);
  return seed;
}

/**
 * fast-check parameters for `numRuns` runs, with FC_SEED's seed and, when
 * `replayPath`, FC_PATH's path (a planted-bug check passes false: a
 * counterexample's path of the property itself would mean nothing to it).
 */
export function replayParams<T>(numRuns: number, replayPath = true): fc.Parameters<T> {
  const seed = process.env.FC_SEED;
  const path = replayPath ? process.env.FC_PATH : undefined;
  return {
    numRuns,
    ...(seed !== undefined && seed !== '' ? { seed: Number(seed) } : {}),
    ...(path !== undefined && path !== '' ? { path } : {}),
  };
}
