/**
 * Serializes saves and coalesces the ones that pile up: a save asked for while
 * another is in flight waits for it, and every request that arrives before the
 * waiting save starts joins it. Each save captures the state at its start, so
 * a request is satisfied only by a save that began after it was made.
 */
export class SaveQueue {
  private inFlight: Promise<void> | null = null;
  private queued: Promise<void> | null = null;

  constructor(private readonly write: () => Promise<void>) {}

  flush(): Promise<void> {
    if (this.queued) return this.queued;
    if (!this.inFlight) return this.start();
    const after = this.inFlight.then(
      () => undefined,
      () => undefined,
    );
    this.queued = after.then(() => {
      this.queued = null;
      return this.start();
    });
    return this.queued;
  }

  /** Resolves once no save is in flight or waiting; starts none. */
  async idle(): Promise<void> {
    while (this.inFlight || this.queued) {
      await (this.queued ?? this.inFlight)!.then(
        () => undefined,
        () => undefined,
      );
    }
  }

  private start(): Promise<void> {
    const run = this.write();
    this.inFlight = run;
    const clear = () => {
      if (this.inFlight === run) this.inFlight = null;
    };
    run.then(clear, clear);
    return run;
  }
}
