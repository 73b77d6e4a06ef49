/** The V3 store's own typed errors (the rest are the engine's: RevisionConflictError, RunIdentityError, ...). */
import { CairnError } from '../errors/index.js';

export type ContextBlobErrorCode = 'blob_digest_mismatch' | 'blob_missing';

/**
 * A context package the store refuses: content that does not hash to its
 * digest, or a digest that is not `sha256:<64 hex>` (`blob_digest_mismatch`);
 * a record whose context points to a package that is neither stored nor in
 * the save (`blob_missing`). Nothing was written by the call that threw it.
 */
export class ContextBlobError extends CairnError {
  constructor(code: ContextBlobErrorCode, readonly digest: string, message: string) {
    super(code, message, { fault: 'user' });
    this.name = 'ContextBlobError';
  }
}
