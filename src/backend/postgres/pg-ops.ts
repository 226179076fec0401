import type { Driver, Executor } from '../../db/driver.js';
import type { Logger } from '../../obs/logger.js';
import type * as SQL from './sql.generated.js';

/**
 * Statements made from an embedded one by leaving out its lines that end with a marker comment,
 * rendered beside the others (see `deriveStatement`).
 */
export const DERIVED_STATEMENTS = {
  // A batch in which no item has an idempotency key cannot conflict on the idempotency index, and
  // ON CONFLICT makes every row a speculative insertion (an arbiter-index check and a confirming
  // WAL record per row, a noticeable share of the statement's server time); nor does the insert
  // need the items' order, which only decides between two items with one key, and sorting costs too.
  enqueueBatchUnkeyed: { from: 'enqueueBatch', drop: '-- [keyed]' },
} as const satisfies Record<string, { from: keyof typeof SQL; drop: string }>;

/** Name of an embedded or derived statement. */
export type StatementName = keyof typeof SQL | keyof typeof DERIVED_STATEMENTS;

/** `text` without its lines ending in `marker`; throws if there is none (the marker was renamed). */
export function deriveStatement(text: string, marker: string): string {
  const lines = text.split('\n');
  const kept = lines.filter((line) => !line.trimEnd().endsWith(marker));
  if (kept.length === lines.length) throw new Error(`no line of the statement ends with ${marker}`);
  return kept.join('\n');
}

/**
 * What the Postgres backend's modules share: the rendered statements, the NOTIFY channels, and a
 * runner that binds parameters and translates "schema missing" errors.
 */
export interface PgOps {
  readonly driver: Driver;
  readonly schema: string;
  readonly logger: Logger;
  readonly sql: Readonly<Record<StatementName, string>>;
  readonly channels: {
    readonly wake: string;
    readonly events: string;
    readonly done: string;
    readonly progress: string;
  };
  run<R = Record<string, unknown>>(
    name: StatementName,
    values: readonly unknown[],
    ex?: Executor,
  ): Promise<R[]>;
  translate(err: unknown): unknown;
}
