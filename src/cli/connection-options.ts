import { validateSchemaName } from '../schema-name.js';
import { CliExit, type CliIo } from './io.js';

/** `--dsn` / `--schema` resolved over `TASKQ_PG_DSN` / `TASKQ_SCHEMA_NAME` (flags win). */
export interface ConnectionFlags {
  dsn?: string;
  schema?: string;
}

/** Resolves the connection string and schema, failing with an actionable message. */
export function resolveConnection(
  flags: ConnectionFlags,
  io: CliIo,
  options: { dsnRequired?: boolean } = {},
): { dsn: string | null; schema: string } {
  const dsn = flags.dsn ?? io.env.TASKQ_PG_DSN ?? null;
  if (options.dsnRequired !== false && (dsn === null || dsn.trim() === '')) {
    throw new CliExit(2, 'no database: pass --dsn postgres://... or set TASKQ_PG_DSN');
  }
  const rawSchema = flags.schema ?? io.env.TASKQ_SCHEMA_NAME ?? 'taskq';
  try {
    return {
      dsn,
      schema: validateSchemaName(rawSchema, flags.schema !== undefined ? '--schema' : 'TASKQ_SCHEMA_NAME'),
    };
  } catch (err) {
    throw new CliExit(2, (err as Error).message);
  }
}
