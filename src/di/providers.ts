/**
 * The provider registry: which value each token stands for, how long it lives, how it is made and
 * torn down. A `Providers` is only a declaration; a Worker given it makes the values (see
 * worker-dependencies.ts), so one registry can serve several Workers.
 */
import { unknownKeyRule } from '../core/closest-name.js';
import { DIError } from '../errors/di-errors.js';
import { isScope, type Scope } from './scope.js';
import { isToken, type DepsOf, type InjectMap, type Token } from './token.js';

/** How a provided value is torn down: awaited, its failure logged (never thrown). */
export type Disposer<T> = (value: T) => void | PromiseLike<void>;

/** Options of {@link Providers.value}. */
export interface ValueProviderOptions {
  /** The scope the value counts as for the scope rule. Default `'process'` (a value lives as long as you keep it). */
  scope?: Scope;
}

/** Options of {@link Providers.factory}. */
export interface FactoryProviderOptions<T, J extends InjectMap> {
  /** How long a made value lives: `'process'`, `'worker'` or `'job'` (one per attempt). */
  scope: Scope;
  /** Tokens the factory needs, by the name its `deps` argument has them under. Default none. */
  inject?: J;
  /**
   * Tears a made value down. Default: the value's `Symbol.asyncDispose`, else its `Symbol.dispose`,
   * else nothing.
   */
  dispose?: Disposer<T>;
}

/** One registration (internal shape, read by the validation and the worker). */
export interface ProviderEntry {
  /** The token it provides. */
  readonly token: Token<unknown>;
  /** Its scope. */
  readonly scope: Scope;
  /** A value given as is (never torn down), or made by `create`. */
  readonly kind: 'value' | 'factory';
  /** The value of a value provider. */
  readonly value: unknown;
  /** What `create` needs: `[name, token]` pairs, in declaration order. */
  readonly inject: readonly (readonly [string, Token<unknown>])[];
  /** The factory of a factory provider. */
  readonly create: ((deps: Record<string, unknown>) => unknown) | null;
  /** The declared disposer, or null (the value's own dispose methods then apply). */
  readonly dispose: Disposer<unknown> | null;
}

/**
 * Providers of injected values, by token. Register each token once:
 *
 * ```ts
 * const providers = new Providers()
 *   .value(Config, { apiUrl: 'https://api.example.com' })
 *   .factory(Db, { scope: 'process', dispose: (pool) => pool.end() }, () => new pg.Pool())
 *   .factory(Tx, { scope: 'job', inject: { db: Db } }, async ({ db }) => db.connect());
 * new Worker({ actors, providers });
 * ```
 */
export class Providers {
  private readonly byToken = new Map<Token<unknown>, ProviderEntry>();

  /** Provides `value` as is. It is yours: the worker never tears it down. */
  value<T>(token: Token<T>, value: T, options: ValueProviderOptions = {}): this {
    const t = checkToken(token, 'providers.value');
    const where = `providers.value(${t.name})`;
    if (options === null || typeof options !== 'object')
      throw new DIError(`${where}: the options must be an object ({ scope? })`);
    checkOptionKeys(options, VALUE_OPTION_KEYS, where);
    const scope = options.scope ?? 'process';
    this.add({
      token: t,
      scope: checkScope(scope, `${where}.scope`),
      kind: 'value',
      value,
      inject: [],
      create: null,
      dispose: null,
    });
    return this;
  }

  /**
   * Provides values made by `create` (sync or async), once per scope: per process, per Worker, or
   * per attempt. `create` receives the values its `inject` names.
   */
  factory<T, J extends InjectMap = Record<never, never>>(
    token: Token<T>,
    options: FactoryProviderOptions<T, J>,
    create: (deps: DepsOf<J>) => T | PromiseLike<T>,
  ): this {
    const t = checkToken(token, 'providers.factory');
    const where = `providers.factory(${t.name})`;
    if (options === null || typeof options !== 'object')
      throw new DIError(
        `${where}: the options must be an object with a scope ('process', 'worker' or 'job')`,
      );
    checkOptionKeys(options, FACTORY_OPTION_KEYS, where);
    const scope = checkScope(options.scope, `${where}.scope`);
    if (typeof create !== 'function') throw new DIError(`${where}: the factory must be a function`);
    if (options.dispose !== undefined && typeof options.dispose !== 'function')
      throw new DIError(`${where}.dispose must be a function (value) => void | Promise<void>`);
    this.add({
      token: t,
      scope,
      kind: 'factory',
      value: undefined,
      inject: checkInjectMap(options.inject, `${where}.inject`),
      create: create as (deps: Record<string, unknown>) => unknown,
      dispose: (options.dispose as Disposer<unknown> | undefined) ?? null,
    });
    return this;
  }

  /** True when `token` has a provider here. */
  has(token: Token<unknown>): boolean {
    return this.byToken.has(token);
  }

  /** The registration of `token`, if any. */
  entry(token: Token<unknown>): ProviderEntry | undefined {
    return this.byToken.get(token);
  }

  /** Every registration, in registration order. */
  entries(): ProviderEntry[] {
    return [...this.byToken.values()];
  }

  private add(entry: ProviderEntry): void {
    if (this.byToken.has(entry.token))
      throw new DIError(
        `${entry.token.name} already has a provider: register each token once (use a second token for a second value)`,
      );
    this.byToken.set(entry.token, Object.freeze(entry));
  }
}

const VALUE_OPTION_KEYS: readonly string[] = ['scope'];
const FACTORY_OPTION_KEYS: readonly string[] = ['scope', 'inject', 'dispose'];

/** A misspelt option (`disposer`, `injects`) would leave a value never torn down or made without its dependencies. */
function checkOptionKeys(options: object, known: readonly string[], where: string): void {
  for (const key of Object.keys(options))
    if (!known.includes(key))
      throw new DIError(
        `${where}.${key}: ${unknownKeyRule(key, known, `an option of ${where.split('(')[0]}`)}`,
      );
}

function checkToken<T>(value: Token<T>, where: string): Token<T> {
  if (!isToken(value))
    throw new DIError(`${where}: ${describe(value)} is not a token: make tokens with token<T>('Name')`);
  return value;
}

function checkScope(value: unknown, where: string): Scope {
  if (!isScope(value))
    throw new DIError(`${where}: ${describe(value)} is not a scope: use 'process', 'worker' or 'job'`);
  return value;
}

/** Validates an `inject` map (of an actor or a factory) into `[name, token]` pairs. */
export function checkInjectMap(value: unknown, where: string): [string, Token<unknown>][] {
  if (value === undefined) return [];
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new DIError(`${where}: ${describe(value)} must be an object of tokens, e.g. { db: Db }`);
  return Object.entries(value).map(([name, t]) => {
    if (!isToken(t))
      throw new DIError(`${where}.${name}: ${describe(t)} is not a token: make tokens with token<T>('Name')`);
    return [name, t];
  });
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
  if (value === null || typeof value !== 'object') return String(value);
  return Array.isArray(value) ? 'an array' : 'an object';
}
