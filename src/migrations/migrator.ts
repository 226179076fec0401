import { createHash } from 'node:crypto';

import type { Driver, DedicatedConnection } from '../db/driver.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { SchemaNotMigratedError, SchemaTooNewError } from '../errors/schema-errors.js';
import type { Logger } from '../obs/logger.js';
import { silentLogger } from '../obs/logger.js';
import { quoteSchema, renderSql, validateSchemaName } from '../core/schema-name.js';
import { MIGRATIONS, type BundledMigration } from './migrations.generated.js';
import { splitSqlStatements } from './split-statements.js';

export type { BundledMigration } from './migrations.generated.js';

/** Which migrations `up()` applies: `pre` (safe during a rolling deploy), `post` (after it), or both. */
export type MigrationPhase = 'pre' | 'post';

/** One migration's state in a schema. */
export interface MigrationStatus {
  id: string;
  phase: MigrationPhase;
  applied: boolean;
  appliedAt: Date | null;
  /** The stored checksum no longer matches the shipped file (warned, never re-applied). */
  checksumDrift: boolean;
}

/** Options of {@link Migrator}. */
export interface MigratorOptions {
  /** Postgres schema to migrate. Default `taskq`. */
  schema?: string;
  /** Where warnings (checksum drift) go. */
  logger?: Logger;
  /** Migrations to manage; defaults to the ones bundled with this package (tests pass their own). */
  migrations?: readonly BundledMigration[];
}

/** The keys of {@link MigratorOptions}: a misspelt `schema` must not migrate the default schema. */
const MIGRATOR_OPTION_KEYS: readonly string[] = ['schema', 'logger', 'migrations'];

interface LedgerRow {
  id: string;
  checksum: string;
  applied_at: Date;
}

/** SHA-256 (hex) of a text. */
export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function ordered(migrations: readonly BundledMigration[]): BundledMigration[] {
  const byPhase = (p: MigrationPhase): BundledMigration[] =>
    migrations.filter((m) => m.phase === p).sort((a, b) => a.version - b.version || a.id.localeCompare(b.id));
  return [...byPhase('pre'), ...byPhase('post')];
}

/**
 * Applies TaskQ's forward-only migrations to one schema.
 *
 * `up()` holds a session advisory lock for the whole run, so concurrent runs serialise: one
 * applies, the others wait and then find nothing to do. Each applied file's rendered SQL is
 * recorded in `schema_migrations` with its SHA-256; a later mismatch is logged as
 * `migration-checksum-drift` and never re-applied. A file whose first lines carry
 * `-- taskq:no-transaction` runs outside a transaction (for `CREATE INDEX CONCURRENTLY`).
 */
export class Migrator {
  readonly schema: string;
  private readonly logger: Logger;
  private readonly migrations: BundledMigration[];

  constructor(
    private readonly driver: Driver,
    options: MigratorOptions = {},
  ) {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('Migrator.options', options, 'must be an object');
    checkKnownKeys(options, MIGRATOR_OPTION_KEYS, 'Migrator', 'an option of new Migrator()');
    this.schema = validateSchemaName(options.schema ?? 'taskq');
    this.logger = options.logger ?? silentLogger;
    this.migrations = ordered(options.migrations ?? MIGRATIONS);
  }

  private ledger(): string {
    return `${quoteSchema(this.schema)}.schema_migrations`;
  }

  private bootstrapSql(): string {
    return (
      `CREATE SCHEMA IF NOT EXISTS ${quoteSchema(this.schema)};\n` +
      `CREATE TABLE IF NOT EXISTS ${this.ledger()} (\n` +
      `  id text PRIMARY KEY,\n  phase text NOT NULL CHECK (phase IN ('pre', 'post')),\n` +
      `  checksum text NOT NULL,\n  applied_at timestamptz NOT NULL DEFAULT clock_timestamp()\n);`
    );
  }

  /** The SQL of a migration with `{schema}` rendered for this migrator's schema. */
  rendered(m: BundledMigration): string {
    return renderSql(m.sql, this.schema);
  }

  private selected(phase?: MigrationPhase): BundledMigration[] {
    if (phase !== undefined && phase !== 'pre' && phase !== 'post') {
      throw new InvalidArgumentError('phase', phase, "must be 'pre' or 'post'");
    }
    return phase ? this.migrations.filter((m) => m.phase === phase) : this.migrations;
  }

  /**
   * Applies every pending migration (all `pre` files, then all `post` files), or only one phase.
   * `phase: 'post'` refuses to run while `pre` migrations are pending.
   * @returns the ids applied by this call, in order.
   */
  async up(options: { phase?: MigrationPhase } = {}): Promise<{ applied: string[] }> {
    const todo = this.selected(options.phase);
    const conn = await this.driver.dedicated();
    const lockKey = `taskq:migrate:${this.schema}`;
    try {
      await conn.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [lockKey]);
      try {
        await conn.query(this.bootstrapSql());
        const applied = await this.readLedger(conn);
        this.warnDrift(applied);
        if (options.phase === 'post') {
          const pendingPre = this.migrations.filter((m) => m.phase === 'pre' && !applied.has(m.id));
          if (pendingPre.length > 0) {
            throw new InvalidArgumentError(
              'phase',
              'post',
              `pre migrations are still pending (${pendingPre.map((m) => m.id).join(', ')}); run \`taskq migrate up --phase pre\` first`,
            );
          }
        }
        const done: string[] = [];
        for (const m of todo) {
          if (applied.has(m.id)) continue;
          await this.apply(conn, m);
          done.push(m.id);
          this.logger.info({ migration: m.id, schema: this.schema }, 'migration-applied');
        }
        return { applied: done };
      } finally {
        await conn
          .query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [lockKey])
          .catch(() => undefined);
      }
    } finally {
      await conn.close();
    }
  }

  private async apply(conn: DedicatedConnection, m: BundledMigration): Promise<void> {
    const sql = this.rendered(m);
    const record = `INSERT INTO ${this.ledger()} (id, phase, checksum) VALUES ($1, $2, $3)`;
    if (!m.transactional) {
      // One statement per query: a multi-statement string would run as one implicit transaction.
      for (const statement of splitSqlStatements(sql)) await conn.query(statement);
      await conn.query(record, [m.id, m.phase, sha256(sql)]);
      return;
    }
    await conn.query('BEGIN');
    try {
      await conn.query(sql);
      await conn.query(record, [m.id, m.phase, sha256(sql)]);
      await conn.query('COMMIT');
    } catch (err) {
      await conn.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }

  private async readLedger(conn: { query: DedicatedConnection['query'] }): Promise<Map<string, LedgerRow>> {
    const res = await conn.query<LedgerRow>(
      `SELECT id, checksum, applied_at FROM ${this.ledger()} ORDER BY id`,
    );
    return new Map(res.rows.map((r) => [r.id, r]));
  }

  private warnDrift(applied: Map<string, LedgerRow>): void {
    for (const m of this.migrations) {
      const row = applied.get(m.id);
      if (row && row.checksum !== sha256(this.rendered(m))) {
        this.logger.warn(
          {
            migration: m.id,
            schema: this.schema,
            storedChecksum: row.checksum,
            shippedChecksum: sha256(this.rendered(m)),
          },
          'migration-checksum-drift',
        );
      }
    }
  }

  /** Every known migration with whether it is applied in the schema (and drift). */
  async status(): Promise<MigrationStatus[]> {
    const applied = await this.tryReadLedger();
    if (applied) this.warnDrift(applied);
    return this.migrations.map((m) => {
      const row = applied?.get(m.id);
      return {
        id: m.id,
        phase: m.phase,
        applied: row !== undefined,
        appliedAt: row?.applied_at ?? null,
        checksumDrift: row !== undefined && row.checksum !== sha256(this.rendered(m)),
      };
    });
  }

  private async tryReadLedger(): Promise<Map<string, LedgerRow> | null> {
    try {
      return await this.readLedger(this.driver);
    } catch (err) {
      if ((err as { code?: string }).code === '42P01' || (err as { code?: string }).code === '3F000')
        return null;
      throw err;
    }
  }

  /**
   * Checks the schema is usable by this version: every `pre` migration applied (post migrations
   * may lag during a rolling deploy) and nothing applied that this version does not know.
   * @throws SchemaNotMigratedError, SchemaTooNewError
   */
  async verify(): Promise<void> {
    const applied = await this.tryReadLedger();
    if (!applied) throw new SchemaNotMigratedError(this.schema);
    const known = new Set(this.migrations.map((m) => m.id));
    const unknown = [...applied.keys()].filter((id) => !known.has(id));
    if (unknown.length > 0) throw new SchemaTooNewError(this.schema, unknown);
    if (this.migrations.some((m) => m.phase === 'pre' && !applied.has(m.id)))
      throw new SchemaNotMigratedError(this.schema);
  }

  /**
   * The whole migration set as one SQL script for external migration tools: the schema and ledger
   * bootstrap, then each migration followed by its ledger row, so TaskQ later sees them applied.
   */
  script(options: { phase?: MigrationPhase } = {}): string {
    const parts = [`-- TaskQ migrations for schema ${this.schema}`, this.bootstrapSql()];
    for (const m of this.selected(options.phase)) {
      const sql = this.rendered(m);
      const ledgerRow =
        `INSERT INTO ${this.ledger()} (id, phase, checksum) VALUES ('${m.id}', '${m.phase}', '${sha256(sql)}') ` +
        'ON CONFLICT (id) DO NOTHING;';
      if (m.transactional) parts.push(`-- ${m.id}\nBEGIN;\n${sql.trim()}\n${ledgerRow}\nCOMMIT;`);
      else parts.push(`-- ${m.id} (runs outside a transaction)\n${sql.trim()}\n${ledgerRow}`);
    }
    return parts.join('\n\n') + '\n';
  }
}
