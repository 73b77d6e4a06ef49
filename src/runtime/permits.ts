/**
 * The single-use permits of one run leg: the only state a run keeps outside
 * its snapshot, on purpose.
 *
 * An effect may start only under a permit, and only a durable write made by
 * this process issues one: the decision that a fresh `executing` receipt is
 * needed registers an intent, and the write that makes that receipt durable
 * turns the intent into a permit. XState restarts every invocation that was
 * active when a snapshot was taken, so after a restore (in another process, or
 * a new leg in this one) the restarted write and effect find neither intent
 * nor permit, and the call decides again from its receipt: replay what is
 * recorded, or stop as an unknown effect.
 */
export class Permits {
  private readonly intents = new Set<string>();
  private readonly issued = new Set<string>();

  /** This leg decided to write a fresh receipt for `key`. */
  intend(key: string): void {
    this.intents.add(key);
  }

  /** The write for `key` is durable: issue its permit if this leg asked for the write. */
  issue(key: string): boolean {
    if (!this.intents.delete(key)) return false;
    this.issued.add(key);
    return true;
  }

  /** Grants a permit outright (for a write that has no decision before it, such as a verifier's attempt count). */
  grant(key: string): void {
    this.issued.add(key);
  }

  /** Takes the permit for `key`, once. */
  take(key: string): boolean {
    return this.issued.delete(key);
  }
}
