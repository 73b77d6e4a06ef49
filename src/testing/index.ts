export * from './mock-model.js';
export * from './faults.js';
