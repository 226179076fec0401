import { checkLoadSettingsOptions, resolveFields } from './load-worker-settings.js';
import { notAvailableEnvProblems, WORKER_SETTING_FIELDS, type SettingField } from './setting-fields.js';
import { settingsErrorFor } from './settings-error.js';

/**
 * The settings a client process needs (the reference's `TaskQSettings`; a worker's settings are a
 * superset). Loaded with {@link loadTaskQSettings}; used by `TaskQ.fromSettings` / `TaskQ.fromEnv`.
 */
export interface TaskQSettings {
  /** `TASKQ_PG_DSN`: connection string of the Postgres database. Default: none (a client must have one; the dev commands then use PGlite). */
  pgDsn: string | null;
  /** `TASKQ_SCHEMA_NAME`: schema holding TaskQ's tables. Default `taskq`. */
  schema: string;
  /** `TASKQ_REDIS_URL`: Redis for live progress (and, on workers, rate limits); `redis://` or `rediss://`. Default: none. */
  redisUrl: string | null;
  /**
   * `TASKQ_PG_CREDENTIAL_PROVIDER`: `<module>:<export>` of a Postgres credential provider (an
   * instance, a zero-argument factory or a class); every Postgres connection then authenticates
   * through it (docs/credentials.md): `TaskQ.fromSettings` imports it, and the CLI flag
   * `--pg-credential-provider` wins over it. Default: none.
   */
  pgCredentialProvider: string | null;
  /**
   * `TASKQ_REDIS_CREDENTIAL_PROVIDER`: `<module>:<export>` of a Redis credential provider (same
   * shapes) for the Redis clients TaskQ builds from `redisUrl`, which it needs
   * (docs/credentials-redis.md); `--redis-credential-provider` wins. Default: none.
   */
  redisCredentialProvider: string | null;
  /** `TASKQ_IDEMPOTENCY_KEY_MAX_BYTES`: bound on idempotency keys and scopes, UTF-8 bytes (1–2048). Default 1024. */
  idempotencyKeyMaxBytes: number;
  /** `TASKQ_PAYLOAD_MAX_BYTES`: bound on a payload's JSON, UTF-8 bytes (1 KiB–64 MiB). Default 1 MiB. */
  payloadMaxBytes: number;
  /**
   * `TASKQ_HEALTH_TOKEN`: when set, the worker's health endpoints require the header
   * `Authorization: Bearer <token>`. Default: none (no authentication).
   */
  healthToken: string | null;
  /**
   * `TASKQ_ENVIRONMENT`: deployment label. `dev` or `development` lets the admin UI start without
   * authentication (with the warning `admin-ui-no-auth`); any other value, or none, fails closed.
   * Default: none.
   */
  environment: string | null;
  /** `TASKQ_ADMIN_HOST`: bind address of `taskq ui serve`. Default `0.0.0.0`. */
  adminHost: string;
  /** `TASKQ_ADMIN_PORT`: TCP port of `taskq ui serve` (0 = a free port). Default 8080. */
  adminPort: number;
  /** `TASKQ_ADMIN_MAX_SSE_CONNECTIONS`: live-update streams the admin UI serves at once (≥ 1). Default 50. */
  adminMaxSseConnections: number;
  /**
   * `TASKQ_ADMIN_UI_POLLING_INTERVAL_SECONDS`: how often a live stream reads its job, and how often
   * a page polls without a stream, in seconds (≥ 0.1). Default 2.
   */
  adminUiPollingIntervalSeconds: number;
  /** `TASKQ_ADMIN_WORKER_LIVENESS_SECONDS`: a worker seen within this many seconds is alive on the overview. Default 30. */
  adminWorkerLivenessSeconds: number;
  /** `TASKQ_ADMIN_UI_REQUIRE_AUTH`: `false` lets the admin UI start without authentication outside dev. Default true. */
  adminUiRequireAuth: boolean;
  /** `TASKQ_ADMIN_UI_FRAME_ANCESTORS`: who may frame the admin UI, `none` or `self`. Default `none`. */
  adminUiFrameAncestors: 'none' | 'self';
  /** `TASKQ_ADMIN_UI_SECURE_COOKIES`: the `Secure` flag on the admin UI's cookies. Default true. */
  adminUiSecureCookies: boolean;
  /** `TASKQ_ADMIN_ACTIONS_ENABLED`: the admin UI's retry and cancel actions. Default false. */
  adminActionsEnabled: boolean;
  /**
   * `TASKQ_ADMIN_URL`: the admin UI's public base URL as a browser reaches it (prefix included).
   * The SSO callback URLs default to it, and `taskq ui serve` prints it as the address to open.
   * Default: none.
   */
  adminUrl: string | null;
  /**
   * `TASKQ_SSO_BACKEND`: `none`, `oidc` (`TASKQ_OIDC_*`) or `saml` (`TASKQ_SAML_*`): how
   * `taskq ui serve` signs users in (docs/ui.md). Default `none`.
   */
  ssoBackend: 'none' | 'oidc' | 'saml';
  /**
   * `TASKQ_ADMIN_UI_ALLOW_RATE_LIMIT_RESET`: the rate-limits page's Reset buttons and
   * `POST /rate-limits/:name/reset` (with actions enabled too). Default false.
   */
  adminUiAllowRateLimitReset: boolean;
  /**
   * `TASKQ_MIGRATE_ON_START`: `taskq ui serve` applies pending migrations before it serves its first
   * request (and exits 1 when they fail). Workers ignore it and log `migrate-on-start-ignored`:
   * several replicas racing to migrate is the hazard migrations avoid. Default false.
   */
  migrateOnStart: boolean;
}

/** The client's settings, by name (every one is also a worker setting: `WorkerSettings` extends these). */
const TASKQ_KEYS: readonly (keyof TaskQSettings)[] = [
  'pgDsn',
  'schema',
  'redisUrl',
  'pgCredentialProvider',
  'redisCredentialProvider',
  'idempotencyKeyMaxBytes',
  'payloadMaxBytes',
  'healthToken',
  'environment',
  'adminHost',
  'adminPort',
  'adminMaxSseConnections',
  'adminUiPollingIntervalSeconds',
  'adminWorkerLivenessSeconds',
  'adminUiRequireAuth',
  'adminUiFrameAncestors',
  'adminUiSecureCookies',
  'adminActionsEnabled',
  'adminUrl',
  'ssoBackend',
  'adminUiAllowRateLimitReset',
  'migrateOnStart',
];

/** The client's rows of the settings table (environment variable, kind, default, rule). */
export const TASKQ_SETTING_FIELDS: readonly SettingField[] = WORKER_SETTING_FIELDS.filter((f) =>
  TASKQ_KEYS.includes(f.key as keyof TaskQSettings),
);

/** Client settings given as an object (all optional); see {@link TaskQSettings}. */
export type TaskQSettingsInput = Partial<TaskQSettings>;

/** Options of {@link loadTaskQSettings}. */
export interface LoadTaskQSettingsOptions {
  /** Environment to read `TASKQ_*` variables from. Default `{}`: pass `process.env` explicitly. */
  env?: Record<string, string | undefined>;
  /** Values that win over the environment and the defaults. */
  overrides?: TaskQSettingsInput;
}

/**
 * Resolves client settings: `overrides` beat `env`, which beats the defaults. Every value is
 * checked and all problems are thrown together as one `SettingsError` naming the setting, where
 * the value came from (variable or `settings.<name>`), the value and the rule. Variables that only
 * workers read are ignored here, so a client can share a worker's environment; a variable TaskQ
 * does not implement yet (`NOT_AVAILABLE_ENV_VARS`: credential providers, the admin UI) is not.
 *
 * @throws InvalidArgumentError when `options` is not an object or has a key other than `env` and `overrides`
 * @throws SettingNotAvailableError when a variable TaskQ does not implement yet is set
 * @throws SettingsError when any value is invalid
 */
export function loadTaskQSettings(options: LoadTaskQSettingsOptions = {}): TaskQSettings {
  checkLoadSettingsOptions(options, 'loadTaskQSettings');
  const { values, problems } = resolveFields(TASKQ_SETTING_FIELDS, options, 'client setting');
  // A credential provider or admin-UI variable would change what a client does in the reference.
  problems.push(...notAvailableEnvProblems(options.env ?? {}));
  if (problems.length > 0) throw settingsErrorFor(problems, [], 'client settings');
  return values as unknown as TaskQSettings;
}
