export * from './viz.js';
export * from './docs.js';
