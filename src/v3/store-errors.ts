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

/**
 * The V3 tables were set up by a newer Cairn (their own version table,
 * `cairn_runs_v3_schema`, holds a version this code does not know): refused,
 * and nothing is changed. The same name as the ops stores' error, so
 * `StoreSchemaVersionError.isInstance` of either recognizes it.
 */
export class V3SchemaVersionError extends CairnError {
  readonly table = 'cairn_runs_v3_schema';
  constructor(readonly backend: 'sqlite' | 'postgres', readonly found: number, readonly supported: number) {
    super('record_version_unsupported',
      `The V3 run tables have schema version ${found} (cairn_runs_v3_schema); this Cairn knows versions up to ${supported}. Upgrade Cairn to open them; nothing was changed.`,
      { fault: 'user' });
    this.name = 'StoreSchemaVersionError';
  }
}
