/**
 * Typed tokens: the keys providers are registered under and actors inject by. A token carries its
 * value's type at compile time only; at run time it is a small frozen object whose `name` appears
 * in every message about it.
 */
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';

/** Marks objects made by {@link token}: a look-alike object is not a token. */
const TOKENS = new WeakSet<object>();

declare const VALUE_TYPE: unique symbol;

/** A typed key for a dependency: `token<DbPool>('Db')`. Compare by identity, not by name. */
export interface Token<T> {
  /** The name shown in messages (validation errors, teardown logs). */
  readonly name: string;
  /** Phantom: the value's type, for inference; never set at run time. */
  readonly [VALUE_TYPE]?: T;
}

/** The value type a token stands for: `TypeOf<typeof Db>` is `DbPool`. */
export type TypeOf<K> = K extends Token<infer T> ? T : never;

/** What an actor or factory injects: argument names mapped to tokens. */
export type InjectMap = Readonly<Record<string, Token<unknown>>>;

/** The object a handler or factory receives for an inject map: each name typed by its token. */
export type DepsOf<I> = { readonly [K in keyof I]: TypeOf<I[K]> };

/**
 * Makes a typed token. Two calls with the same name make two different tokens: export the token
 * from one module and import it where it is provided and injected.
 *
 * ```ts
 * export const Db = token<pg.Pool>('Db');
 * ```
 */
export function token<T>(name: string): Token<T> {
  if (typeof name !== 'string' || name.trim() === '')
    throw new InvalidArgumentError('token.name', name, 'must be a non-empty string');
  const t = Object.freeze({ name }) as Token<T>;
  TOKENS.add(t);
  return t;
}

/** True when `value` was made by {@link token}. */
export function isToken(value: unknown): value is Token<unknown> {
  return typeof value === 'object' && value !== null && TOKENS.has(value);
}
