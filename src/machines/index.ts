/** The machine definitions Cairn runs, and their charts. */
export * from '../../machines/index.js';
export * from './viz.js';
export * from './docs.js';
export * from './describe.js';
export * from './chart-html.js';
export * from './replay.js';
