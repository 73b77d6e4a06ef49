/**
 * `cairn/headless`: native agent runs without a UI, for scripts, CI jobs and
 * cron. Node-only: it reads instruction files and skill folders from disk.
 */
export * from './types.js';
export { BUNDLED_PRICES, bundledPrice, bundledPriceProvider } from './prices.js';
export * from './project-instructions.js';
export * from './skills.js';
export * from './doctor.js';
export { runHeadless, resumeHeadless } from './run.js';
export { inspectRun, DEFAULT_HEADLESS_SCOPE, type InspectRunOptions } from './inspect.js';
export { exitCodeFor, HEADLESS_EXIT_CODES } from './report.js';
export { checkStoredRuns, type CheckStoredRunsOptions, type StoredRunCheck, type StoredRunProblem } from './check.js';
export { DEFAULT_BREAKER_THRESHOLD, DEFAULT_BREAKER_COOLDOWN_MS } from '../models/breaker.js';
