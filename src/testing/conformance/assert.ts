/** Small assertion helpers on node:assert/strict, so the suites need no test framework. */
import assert from 'node:assert/strict';

/** Awaits `promise` and checks that it rejects with an error of this `name` and `code`; returns the error. */
export async function rejectsWith(
  promise: Promise<unknown>,
  expected: { name: string; code: string },
  what: string,
): Promise<Error & Record<string, unknown>> {
  let outcome: { error: unknown } | undefined;
  try {
    await promise;
  } catch (error) {
    outcome = { error };
  }
  if (!outcome) assert.fail(`${what}: resolved; expected ${expected.name} (${expected.code}).`);
  const error = outcome.error as Error & Record<string, unknown>;
  assert.equal(error?.name, expected.name, `${what}: expected ${expected.name} (${expected.code}), got ${describeError(error)}`);
  assert.equal(error.code, expected.code, `${what}: expected code ${expected.code}, got ${describeError(error)}`);
  return error;
}

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name} (${String((error as { code?: unknown }).code)}): ${error.message}`;
  return String(error);
}

/** Settles every promise and checks that exactly one resolved; returns its index and the rejections. */
export async function exactlyOneWins<T>(
  promises: Promise<T>[],
  what: string,
): Promise<{ winner: number; value: T; losers: unknown[] }> {
  const settled = await Promise.allSettled(promises);
  const winners = settled.flatMap((s, i) => (s.status === 'fulfilled' ? [i] : []));
  assert.equal(winners.length, 1, `${what}: ${winners.length} of ${promises.length} won; exactly one should.`);
  const winner = winners[0]!;
  return {
    winner,
    value: (settled[winner] as PromiseFulfilledResult<T>).value,
    losers: settled.flatMap((s) => (s.status === 'rejected' ? [s.reason] : [])),
  };
}
