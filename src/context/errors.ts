/**
 * ContextError: what the context compiler refuses. `context_overflow`: the
 * step's history does not fit the model's window even with every retrieval
 * record left out (the model is not called). `context_blob_missing`: a stored
 * manifest points to a package blob the store no longer has. 
 * `context_state_mismatch`: a resume was given a compiler whose state()
 * differs from the one the run stored.
 */
import { CairnError } from '../errors/index.js';

export type ContextErrorCode = 'context_overflow' | 'context_blob_missing' | 'context_state_mismatch';

export class ContextError extends CairnError {
  constructor(code: ContextErrorCode, message: string) {
    super(code, message, { fault: 'user' });
    this.name = 'ContextError';
  }
}
