/**
 * The alternating rounds the side-by-side benches share: each round runs
 * every kind once, and the kind that goes first rotates from round to round,
 * so a drift of the machine (another process, a GC, the page cache) falls on
 * every kind alike. The warm-up rounds run but their samples are dropped.
 */
export async function alternateRounds<K extends string, S>(
  kinds: readonly K[],
  rounds: { warmup: number; measured: number },
  once: (kind: K, round: number) => Promise<S>,
): Promise<Record<K, S[]>> {
  const samples = Object.fromEntries(kinds.map((k) => [k, [] as S[]])) as Record<K, S[]>;
  for (let round = 0; round < rounds.warmup + rounds.measured; round++) {
    for (let k = 0; k < kinds.length; k++) {
      const kind = kinds[(round + k) % kinds.length]!;
      const sample = await once(kind, round);
      if (round >= rounds.warmup) samples[kind].push(sample);
    }
  }
  return samples;
}
