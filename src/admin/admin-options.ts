import type { FastifyRequest } from 'fastify';

import type { TaskQ } from '../client/taskq.js';
import type { ActorDefinition } from '../core/actor.js';
import { checkKnownKeys } from '../core/closest-name.js';
import { MAX_TIMER_MS, toMs, type Duration } from '../core/duration.js';
import { AdminAuthRequiredError } from '../errors/admin-errors.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { Logger } from '../obs/logger.js';
import { silentLogger } from '../obs/logger.js';
import {
  checkUrl,
  resolveOidc,
  resolveSaml,
  type OidcOptions,
  type ResolvedSso,
  type SamlOptions,
} from './sso-options.js';

/** Who is looking at the admin UI, as the auth hook says. */
export interface AdminUser {
  /** A name for logs (`admin-action` records it); never shown to other users. */
  user: string;
  /**
   * May this user read job payloads and results? Default `true`. With `false`, the job page says
   * "hidden" instead of showing them, so an operator can retry or cancel without seeing data.
   */
  readPayloads?: boolean;
  /**
   * May this user retry and cancel jobs (when the UI's actions are enabled)? Default `true`; with
   * `false` the action buttons are hidden and the endpoints answer 403.
   */
  actions?: boolean;
}

/**
 * The fields of {@link AdminUser}: an auth hook's result with any other key is refused (a
 * misspelt `readPayload: false` would otherwise show payloads to a user meant not to see them).
 */
export const ADMIN_USER_KEYS: readonly string[] = ['user', 'readPayloads', 'actions'];

/**
 * Authenticates a request: the user, or `null` to refuse it with 401. It runs before every route
 * of the UI (pages, actions, SSE); it may read the host's session, a header or a client certificate.
 */
export type AdminAuthHook = (request: FastifyRequest) => Promise<AdminUser | null>;

/** Options of `adminPlugin` (mounted in your Fastify app) and `serveAdmin` (standalone). */
export interface AdminOptions {
  /** The client the UI reads and acts through (not closed by the UI). */
  tq: TaskQ;
  /** Authentication hook; see {@link AdminAuthHook}. Default: none. */
  auth?: AdminAuthHook;
  /**
   * A bearer token that authenticates as user `token`: the header `Authorization: Bearer <token>`,
   * or the login form (which sets an HttpOnly cookie holding a keyed hash of it, not the token).
   * `taskq ui serve` uses `TASKQ_HEALTH_TOKEN`. Default: none.
   */
  token?: string | null;
  /**
   * Single sign-on through an OpenID Connect provider (`TASKQ_SSO_BACKEND=oidc`, `TASKQ_OIDC_*`).
   * Counts as authentication. Not together with `saml`. Default: none. See docs/ui.md.
   */
  oidc?: OidcOptions;
  /**
   * Single sign-on through a SAML 2.0 IdP (`TASKQ_SSO_BACKEND=saml`, `TASKQ_SAML_*`). Counts as
   * authentication. Not together with `oidc`. Default: none. See docs/ui.md.
   */
  saml?: SamlOptions;
  /**
   * `TASKQ_ADMIN_URL`: the UI's public base URL as a browser sees it, prefix included (e.g.
   * `https://ops.example.com/admin`). The SSO callback URLs default to it. Default: none.
   */
  adminUrl?: string | null;
  /**
   * `TASKQ_ENVIRONMENT`: `dev` or `development` allows starting without authentication (with a
   * warning); anything else, or none, fails closed. Default: none.
   */
  environment?: string | null;
  /**
   * `TASKQ_ADMIN_UI_REQUIRE_AUTH`: `false` allows an unauthenticated UI outside dev (only behind an
   * authenticating proxy or on an air-gapped host). Default `true`.
   */
  requireAuth?: boolean;
  /** `TASKQ_ADMIN_ACTIONS_ENABLED`: show and accept retry / cancel. Default `false`. */
  actionsEnabled?: boolean;
  /**
   * `TASKQ_ADMIN_UI_ALLOW_RATE_LIMIT_RESET`: show a Reset button per rate limit on the rate-limits
   * page and serve `POST /rate-limits/:name/reset`. Needs `actionsEnabled` too (and a user with
   * `actions`); each reset is logged at warn level with who did it. Default `false`: a reset
   * readmits a whole burst at once, so it is off unless asked for.
   */
  allowRateLimitReset?: boolean;
  /** `TASKQ_ADMIN_UI_FRAME_ANCESTORS`: who may frame the UI, `none` or `self`. Default `none`. */
  frameAncestors?: 'none' | 'self';
  /** `TASKQ_ADMIN_UI_SECURE_COOKIES`: the `Secure` flag on the UI's cookies. Default `true`. */
  secureCookies?: boolean;
  /** `TASKQ_ADMIN_MAX_SSE_CONNECTIONS`: live-update streams served at once (≥ 1). Default 50. */
  maxSseConnections?: number;
  /**
   * `TASKQ_ADMIN_UI_POLLING_INTERVAL_SECONDS` as a duration: how often a live stream reads the job,
   * and how often the page polls when it cannot get a stream (≥ 100 ms). Default `'2s'`.
   */
  pollInterval?: Duration;
  /**
   * `TASKQ_ADMIN_WORKER_LIVENESS_SECONDS` as a duration: a worker seen within it counts as alive
   * on the overview (≥ 1 s). Default `'30s'`.
   */
  workerLiveness?: Duration;
  /** Largest payload or result shown on a job page, in characters of JSON. Default 65,536. */
  maxShownChars?: number;
  /** Largest error traceback shown, in characters. Default 2,000 (`exceptionMessageMaxChars`). */
  maxTracebackChars?: number;
  /** Where `admin-action` and `admin-ui-no-auth` records go. Default: nowhere. */
  logger?: Logger;
  /**
   * The actors your code declares (the refs you give your workers). With them the actors page
   * shows drift: where a stored row's queue or metadata differs from the code (a worker refuses to
   * start on that) and where an operator's capacity value differs from the code's literal. Without
   * them the page shows the stored rows only: the database does not hold the code's declarations.
   * Default: none.
   */
  actors?: readonly ActorDefinition[];
}

/** The keys of {@link AdminOptions}; any other is refused, not ignored (`actionEnabled` is an error). */
export const ADMIN_OPTION_KEYS: readonly string[] = [
  'tq',
  'auth',
  'token',
  'oidc',
  'saml',
  'adminUrl',
  'environment',
  'requireAuth',
  'actionsEnabled',
  'allowRateLimitReset',
  'frameAncestors',
  'secureCookies',
  'maxSseConnections',
  'pollInterval',
  'workerLiveness',
  'maxShownChars',
  'maxTracebackChars',
  'logger',
  'actors',
];

/**
 * What `adminPlugin` accepts: {@link ADMIN_OPTION_KEYS} plus the keys Fastify's `register` reads
 * from the same object (its `RegisterOptions`: `prefix`, `logLevel`, `logSerializers`).
 */
export const ADMIN_PLUGIN_OPTION_KEYS: readonly string[] = [
  ...ADMIN_OPTION_KEYS,
  'prefix',
  'logLevel',
  'logSerializers',
];

/** {@link AdminOptions} checked, with defaults applied (each field as documented there). */
export interface ResolvedAdminOptions {
  /** The client. */
  tq: TaskQ;
  /** The auth hook, or null. */
  auth: AdminAuthHook | null;
  /** The bearer token, or null. */
  token: string | null;
  /** The SSO backend, or null. */
  sso: ResolvedSso | null;
  /** The public base URL without a trailing slash, or null. */
  adminUrl: string | null;
  /** The environment label, or null. */
  environment: string | null;
  /** Retry and cancel allowed. */
  actionsEnabled: boolean;
  /** Rate-limit resets allowed (with `actionsEnabled`). */
  allowRateLimitReset: boolean;
  /** CSP `frame-ancestors` / `X-Frame-Options`. */
  frameAncestors: 'none' | 'self';
  /** `Secure` cookies (and HSTS). */
  secureCookies: boolean;
  /** Live streams served at once. */
  maxSseConnections: number;
  /** Stream read and page poll interval, ms. */
  pollIntervalMs: number;
  /** Worker liveness window, ms. */
  workerLivenessMs: number;
  /** Bound on shown payloads and results, characters. */
  maxShownChars: number;
  /** Bound on shown error messages and tracebacks, characters. */
  maxTracebackChars: number;
  /** Where the UI's events go. */
  logger: Logger;
  /** The code's actor declarations by name, or null when none were given. */
  actors: ReadonlyMap<string, ActorDefinition> | null;
}

/** Environments in which the UI may run without authentication (the reference's). */
const DEV_ENVIRONMENTS = ['dev', 'development'];

function positiveInteger(value: unknown, field: string, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min)
    throw new InvalidArgumentError(field, value, `must be an integer >= ${min}`);
  return value;
}

function durationAtLeast(
  value: Duration | undefined,
  field: string,
  fallback: number,
  minMs: number,
): number {
  if (value === undefined) return fallback;
  const ms = toMs(value, field, 'positive', MAX_TIMER_MS);
  if (ms < minMs) throw new InvalidArgumentError(field, value, `must be at least ${minMs} ms`);
  return ms;
}

function booleanOr(value: unknown, field: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new InvalidArgumentError(field, value, 'must be true or false');
  return value;
}

/**
 * Checks the options and applies defaults. Fails closed: outside `dev`/`development`, without an
 * auth hook, a token or SSO (`oidc` / `saml`) and with `requireAuth` left on, it throws. Logs `admin-ui-no-auth` (warn)
 * whenever the UI will serve without authentication, in every environment.
 * @throws InvalidArgumentError naming the option, the value and the rule
 * @throws AdminAuthRequiredError when authentication is required and missing
 */
export function resolveAdminOptions(options: AdminOptions): ResolvedAdminOptions {
  return resolveKnownAdminOptions(options, ADMIN_OPTION_KEYS, 'an option of resolveAdminOptions');
}

/**
 * {@link resolveAdminOptions} for `adminPlugin`, whose options object also carries Fastify's
 * register keys ({@link ADMIN_PLUGIN_OPTION_KEYS}).
 * @throws InvalidArgumentError naming the option, the value and the rule
 * @throws AdminAuthRequiredError when authentication is required and missing
 */
export function resolveAdminPluginOptions(options: AdminOptions): ResolvedAdminOptions {
  return resolveKnownAdminOptions(options, ADMIN_PLUGIN_OPTION_KEYS, 'an option of adminPlugin');
}

function resolveKnownAdminOptions(
  options: AdminOptions,
  known: readonly string[],
  what: string,
): ResolvedAdminOptions {
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError('options', options, 'must be an object with at least { tq }');
  // Concealed: a misspelt `tokn` holds the token.
  checkKnownKeys(options, known, 'options', what);
  if (!options.tq || typeof options.tq.list !== 'function')
    throw new InvalidArgumentError('options.tq', options.tq, 'must be a TaskQ client');
  if (options.auth !== undefined && typeof options.auth !== 'function')
    throw new InvalidArgumentError(
      'options.auth',
      options.auth,
      'must be a function (request) => Promise<{ user } | null>',
    );
  const token = options.token ?? null;
  if (token !== null && (typeof token !== 'string' || !/^[\x21-\x7e]{1,1024}$/.test(token)))
    throw new InvalidArgumentError(
      'options.token',
      '<redacted>',
      'must be 1-1024 visible ASCII characters (no spaces)',
    );
  const environment = options.environment ?? null;
  if (environment !== null && typeof environment !== 'string')
    throw new InvalidArgumentError('options.environment', environment, 'must be a string or null');
  const frameAncestors = options.frameAncestors ?? 'none';
  if (frameAncestors !== 'none' && frameAncestors !== 'self')
    throw new InvalidArgumentError('options.frameAncestors', frameAncestors, 'must be "none" or "self"');
  const requireAuth = booleanOr(options.requireAuth, 'options.requireAuth', true);
  const logger = options.logger ?? silentLogger;
  const auth = options.auth ?? null;
  const adminUrl =
    options.adminUrl === undefined || options.adminUrl === null
      ? null
      : // A base to append paths to, so without its trailing slash.
        checkUrl(options.adminUrl, 'options.adminUrl').replace(/\/+$/, '');
  if (options.oidc !== undefined && options.saml !== undefined)
    throw new InvalidArgumentError('options.saml', '<object>', 'give oidc or saml, not both');
  const sso =
    options.oidc !== undefined
      ? resolveOidc(options.oidc, adminUrl)
      : options.saml !== undefined
        ? resolveSaml(options.saml, adminUrl)
        : null;
  const resolved: ResolvedAdminOptions = {
    tq: options.tq,
    auth,
    token,
    sso,
    adminUrl,
    environment,
    actionsEnabled: booleanOr(options.actionsEnabled, 'options.actionsEnabled', false),
    allowRateLimitReset: booleanOr(options.allowRateLimitReset, 'options.allowRateLimitReset', false),
    frameAncestors,
    secureCookies: booleanOr(options.secureCookies, 'options.secureCookies', true),
    maxSseConnections: positiveInteger(options.maxSseConnections, 'options.maxSseConnections', 50),
    pollIntervalMs: durationAtLeast(options.pollInterval, 'options.pollInterval', 2000, 100),
    workerLivenessMs: durationAtLeast(options.workerLiveness, 'options.workerLiveness', 30_000, 1000),
    maxShownChars: positiveInteger(options.maxShownChars, 'options.maxShownChars', 65_536),
    maxTracebackChars: positiveInteger(options.maxTracebackChars, 'options.maxTracebackChars', 2000),
    logger,
    actors: declaredActors(options.actors),
  };
  if (auth === null && token === null && sso === null) {
    const dev = environment !== null && DEV_ENVIRONMENTS.includes(environment.trim().toLowerCase());
    if (!dev && requireAuth) throw new AdminAuthRequiredError(environment);
    logger.warn(
      { environment, reason: dev ? 'dev environment' : 'requireAuth is false' },
      'admin-ui-no-auth',
    );
  }
  return resolved;
}

/** The `actors` option by name; a repeated name is refused (which declaration would drift?). */
function declaredActors(
  actors: readonly ActorDefinition[] | undefined,
): ReadonlyMap<string, ActorDefinition> | null {
  if (actors === undefined) return null;
  if (!Array.isArray(actors))
    throw new InvalidArgumentError('options.actors', actors, 'must be an array of actors (actor() refs)');
  const byName = new Map<string, ActorDefinition>();
  for (const [i, a] of (actors as unknown[]).entries()) {
    const ref = a as Partial<ActorDefinition> | null;
    if (
      ref === null ||
      typeof ref !== 'object' ||
      typeof ref.name !== 'string' ||
      typeof ref.queue !== 'string'
    )
      throw new InvalidArgumentError(`options.actors[${i}]`, a, 'must be an actor declared with actor()');
    if (byName.has(ref.name))
      throw new InvalidArgumentError(`options.actors[${i}]`, ref.name, 'names an actor already in the list');
    byName.set(ref.name, ref as ActorDefinition);
  }
  return byName;
}
