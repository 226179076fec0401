import { createHash } from 'node:crypto';

import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/** The identifier rule every schema name must meet before it is placed into SQL. */
export const IDENT_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Default Postgres schema holding TaskQ's tables. */
export const DEFAULT_SCHEMA = 'taskq';

/**
 * Validates a schema name and returns it unchanged. Schema names are the only identifiers TaskQ
 * interpolates into SQL, so every site that does so calls this first (defence in depth).
 */
export function validateSchemaName(schema: unknown, field = 'schema'): string {
  if (typeof schema !== 'string' || !IDENT_RE.test(schema) || schema.length > 63) {
    throw new InvalidArgumentError(
      field,
      schema,
      'must match ^[A-Za-z_][A-Za-z0-9_]*$ and be at most 63 characters',
    );
  }
  return schema;
}

/** Quotes a validated schema name as a Postgres identifier. */
export function quoteSchema(schema: string): string {
  return `"${validateSchemaName(schema)}"`;
}

/**
 * Replaces the `{schema}` placeholder in a SQL text with the quoted schema identifier, and
 * `{wake_channel}` with the schema's {@link wakeChannel} as a string literal (for SQL that wakes
 * producers itself, such as a trigger: the channel's hash of a long name is not computable in SQL).
 */
export function renderSql(sql: string, schema: string): string {
  const quoted = quoteSchema(schema);
  // The channel is an identifier made of the validated name: no quote to escape.
  return sql.replaceAll('{schema}', quoted).replaceAll('{wake_channel}', `'${wakeChannel(schema)}'`);
}

// Postgres truncates identifiers at 63 bytes and pg_notify() rejects longer channel names, so a
// name that would be too long keeps its readable prefix and ends in a hash of the full name.
function channel(name: string): string {
  if (name.length <= 63) return name;
  const digest = createHash('sha1').update(name).digest('hex').slice(0, 16);
  return `${name.slice(0, 46)}_${digest}`;
}

/** NOTIFY channel that wakes producers after new dispatchable work appears. */
export function wakeChannel(schema: string): string {
  return channel(`taskq_wake_${validateSchemaName(schema)}`);
}

/** NOTIFY channel carrying cancel requests (and job-event wakeups) for every listener of the schema. */
export function eventsChannel(schema: string): string {
  return channel(`taskq_events_${validateSchemaName(schema)}`);
}

/** NOTIFY channel announcing jobs whose progress was written (wakes Postgres-driven streams). */
export function progressChannel(schema: string): string {
  return channel(`taskq_progress_${validateSchemaName(schema)}`);
}

/** NOTIFY channel announcing jobs that reached a terminal status (wakes `JobHandle.wait()`). */
export function doneChannel(schema: string): string {
  return channel(`taskq_done_${validateSchemaName(schema)}`);
}

/**
 * NOTIFY channel targeted at one worker: a digest of schema and worker id, so it stays short for
 * any schema name. SQL computes the same name: `'taskq_worker_' || substr(md5(schema || ':' || id), 1, 24)`.
 */
export function workerChannel(schema: string, workerId: string): string {
  const digest = createHash('md5')
    .update(`${validateSchemaName(schema)}:${workerId.toLowerCase()}`)
    .digest('hex');
  return `taskq_worker_${digest.slice(0, 24)}`;
}
