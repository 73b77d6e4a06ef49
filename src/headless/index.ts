/**
 * `cairn/headless`: native agent runs without a UI, for scripts, CI jobs and
 * cron. Node-only: it reads instruction files and skill folders from disk.
 */
export * from './types.js';
export { BUNDLED_PRICES, bundledPrice, bundledPriceProvider } from './prices.js';
export * from './project-instructions.js';
export * from './skills.js';
export * from './doctor.js';
