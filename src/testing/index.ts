export * from './mock-model.js';
