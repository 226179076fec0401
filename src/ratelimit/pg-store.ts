import type { Driver } from '../db/driver.js';
import { DEFAULT_SCHEMA, renderSql } from '../schema-name.js';
import { RateLimitBackendMissing } from './errors.js';
import * as SQL from './sql.generated.js';
import { DEFAULT_PG_LOCK_TIMEOUT_MS, type RateLimitContext } from './types.js';

/** Names of the embedded rate-limit statements. */
export type StatementName = keyof typeof SQL;

const rendered = new Map<string, string>();

/** The statement with `{schema}` rendered (validated and quoted), cached per schema. */
export function sql(name: StatementName, schema: string): string {
  const key = `${schema}\u0000${name}`;
  let text = rendered.get(key);
  if (text === undefined) {
    text = renderSql(SQL[name], schema);
    rendered.set(key, text);
  }
  return text;
}

/** The schema of a context (default `taskq`). */
export function schemaOf(ctx: RateLimitContext): string {
  return ctx.schema ?? DEFAULT_SCHEMA;
}

/** The driver of a Postgres-backed call, or a configuration error naming what is missing. */
export function requireDriver(ctx: RateLimitContext, bucketName: string, hint?: string): Driver {
  if (!ctx.driver) {
    throw new RateLimitBackendMissing(
      bucketName,
      'driver',
      hint ?? 'pass the Postgres driver as ctx.driver (and ctx.schema when not "taskq")',
    );
  }
  return ctx.driver;
}

/** The row-lock budget of a context, as a `lock_timeout` setting value. */
export function lockTimeoutSetting(ctx: RateLimitContext): string {
  return `${Math.max(1, Math.round(lockTimeoutMs(ctx)))}ms`;
}

/** The row-lock budget of a context, in ms. */
export function lockTimeoutMs(ctx: RateLimitContext): number {
  const ms = ctx.lockTimeoutMs;
  return typeof ms === 'number' && Number.isFinite(ms) && ms > 0 ? ms : DEFAULT_PG_LOCK_TIMEOUT_MS;
}

/** SQLSTATE 55P03 (lock_not_available): the lock budget ran out. */
export function isLockTimeout(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '55P03';
}

/** Postgres float8 columns arrive as numbers; numeric / bigint ones as strings. */
export function toNumber(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  const n = typeof value === 'number' ? value : Number(value);
  return Number.isFinite(n) ? n : null;
}

/** How many times a statement that found its row created concurrently is re-run. */
export const CREATE_RACE_ATTEMPTS = 3;
