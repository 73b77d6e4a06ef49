/**
 * Switches that plant known bugs, for tests that must show a guarantee fails
 * without the mechanism behind it. Not exported from any public entry.
 */
export const plantedBugs = {
  /** executeTool runs a restarted effect without the permit of the `executing` receipt write. */
  ignoreEffectPermit: false,
  /** beginEffect issues the permit without making the `executing` receipt durable first. */
  skipExecutingReceipt: false,
};
