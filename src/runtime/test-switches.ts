/**
 * Known bugs a test can plant, to show that a guarantee fails without the
 * mechanism behind it. They are never read from module state: a test passes
 * them in the options' `deps` under {@link PLANTED_BUGS} (a symbol no public
 * entry exports), and the leg reads them once when it starts.
 */
export interface PlantedBugs {
  /** executeTool runs a restarted effect without the permit of the `executing` receipt write. */
  readonly ignoreEffectPermit?: boolean;
  /** The `executing` receipt is not made durable before the permit is issued. */
  readonly skipExecutingReceipt?: boolean;
}

export const PLANTED_BUGS: unique symbol = Symbol.for('cairn.test.plantedBugs');

const NONE: PlantedBugs = Object.freeze({});

/** The bugs planted in these deps, or none. */
export function plantedBugsIn(deps: unknown): PlantedBugs {
  if (typeof deps !== 'object' || deps === null) return NONE;
  const bugs = (deps as Record<symbol, unknown>)[PLANTED_BUGS];
  return typeof bugs === 'object' && bugs !== null ? Object.freeze({ ...(bugs as PlantedBugs) }) : NONE;
}
