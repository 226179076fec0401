import { TaskQError } from './taskq-error.js';

/** The TaskQ tables are missing from the configured schema. */
export class SchemaNotMigratedError extends TaskQError {
  /** The Postgres schema that was queried. */
  readonly schema: string;

  constructor(schema: string, options?: { cause?: unknown }) {
    super(
      'TASKQ_SCHEMA_NOT_MIGRATED',
      `TaskQ tables are missing from schema ${JSON.stringify(schema)}; run \`npx taskq migrate up --schema ${schema}\``,
      options,
    );
    this.schema = schema;
  }
}

/** The schema holds migrations this version of TaskQ does not know: the code is older than the database. */
export class SchemaTooNewError extends TaskQError {
  /** The Postgres schema that was checked. */
  readonly schema: string;
  /** Applied migration ids this version does not ship. */
  readonly unknownMigrations: readonly string[];

  constructor(schema: string, unknownMigrations: readonly string[]) {
    super(
      'TASKQ_SCHEMA_TOO_NEW',
      `schema ${JSON.stringify(schema)} has migrations this TaskQ version does not know (${unknownMigrations.join(', ')}); ` +
        'upgrade the taskq package on this host before starting it',
    );
    this.schema = schema;
    this.unknownMigrations = unknownMigrations;
  }
}

/**
 * The same idempotency key was reused under a different scope while the idempotency-scope migration
 * is half applied. TaskQ for TypeScript ships the composite index from its first migration, so this
 * error exists for API parity and is raised only by schemas upgraded from a pre-scope layout.
 */
export class ScopedIdempotencyMigrationPendingError extends TaskQError {
  /** Actor of the refused enqueue. */
  readonly actor: string;
  /** The reused key. */
  readonly idempotencyKey: string;
  /** The scope of the refused enqueue. */
  readonly idempotencyScope: string;

  constructor(fields: { actor: string; idempotencyKey: string; idempotencyScope: string; detail: string }) {
    super(
      'TASKQ_SCOPED_IDEMPOTENCY_MIGRATION_PENDING',
      `${fields.detail}; finish the migration with \`npx taskq migrate up --phase post\``,
    );
    this.actor = fields.actor;
    this.idempotencyKey = fields.idempotencyKey;
    this.idempotencyScope = fields.idempotencyScope;
  }
}
