import { CairnError } from '../../errors/index.js';

/**
 * The database's Cairn schema is newer than this code (a newer Cairn migrated
 * it): the store refuses to touch it. Nothing was changed; upgrade Cairn
 * instead of downgrading the database. The same name as the SQLite store's,
 * so `StoreSchemaVersionError.isInstance` recognizes either.
 */
export class StoreSchemaVersionError extends CairnError {
  readonly backend = 'postgres' as const;
  constructor(
    /** The PostgreSQL schema that holds the ops tables. */
    readonly schema: string,
    /** The version the database is at. */
    readonly found: number,
    /** The newest version this code knows. */
    readonly supported: number,
  ) {
    super(
      'record_version_unsupported',
      `The ops schema "${schema}" has schema version ${found}; this Cairn knows versions up to ${supported}. Upgrade Cairn to open it; the database was not changed.`,
      { fault: 'user' },
    );
    this.name = 'StoreSchemaVersionError';
  }
}
