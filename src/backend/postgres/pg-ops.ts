import type { Driver, Executor } from '../../db/driver.js';
import type { Logger } from '../../obs/logger.js';
import type * as SQL from './sql.generated.js';

/** Name of an embedded statement. */
export type StatementName = keyof typeof SQL;

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
