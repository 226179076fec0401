import { describeMaxMs, formatMs, toMs, type Duration } from '../core/duration.js';
import { checkKnownKeys, closestName } from '../core/closest-name.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { checkQueueName, isPlainObject } from '../core/text-checks.js';
import {
  describeRule,
  settingName,
  implicitDurationMax,
  notAvailableEnvProblems,
  notAvailableRule,
  WORKER_SETTING_FIELDS,
  type SettingField,
} from './setting-fields.js';
import { SettingsError, settingsErrorFor, type SettingProblem } from './settings-error.js';
import { unknownEnvVarWarnings } from './unknown-env-vars.js';
import type { WorkerSettings } from './worker-settings.js';

export { SettingNotAvailableError, SettingsError, type SettingProblem } from './settings-error.js';

type Key = keyof WorkerSettings;
type InputName<K extends Key> = K extends `${infer Base}Ms` ? Base : K;
type InputValue<K extends Key> = K extends `${string}Ms`
  ? Duration | Extract<WorkerSettings[K], null>
  : WorkerSettings[K] extends string[]
    ? readonly string[]
    : WorkerSettings[K];

/**
 * Worker settings given as an object (all optional). Durations take a {@link Duration}
 * (milliseconds, or a string such as `'30s'`) under the name without the `Ms` suffix
 * (`heartbeatInterval: '10s'`, `lockLease: 60_000`); other fields take their plain type
 * (`queues: ['a', 'b']`, `maxConcurrency: 16`). See {@link WorkerSettings} for each field's meaning
 * and default. `undefined` means "not given"; `null` clears a field that accepts null.
 */
export type WorkerSettingsInput = { [K in Key as InputName<K>]?: InputValue<K> };

/** Options of {@link loadWorkerSettings}. */
export interface LoadWorkerSettingsOptions {
  /**
   * Environment to read `TASKQ_*` variables from. Default `{}`: the library never reads
   * `process.env` by itself; pass it explicitly (`{ env: process.env }`).
   */
  env?: Record<string, string | undefined>;
  /** Values that win over the environment and the defaults. */
  overrides?: WorkerSettingsInput;
}

/** The keys of {@link LoadWorkerSettingsOptions} (and of the client's `LoadTaskQSettingsOptions`). */
const LOAD_OPTION_KEYS: readonly string[] = ['env', 'overrides'];

/**
 * Refuses options of a settings loader that are not an object, name an unknown key (`overides`
 * would silently load the defaults) or give an `env` that is not an object; `field` names the
 * loader in the error (`loadWorkerSettings`).
 *
 * @throws InvalidArgumentError naming `<field>.<key>`
 */
export function checkLoadSettingsOptions(options: unknown, field: string): void {
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError(`${field}.options`, options, 'must be an object ({ env, overrides })');
  checkKnownKeys(options, LOAD_OPTION_KEYS, field, `an option of ${field}()`);
  const { env } = options as { env?: unknown };
  if (env !== undefined && (env === null || typeof env !== 'object'))
    throw new InvalidArgumentError(`${field}.env`, env, 'must be an object of environment variables');
}

/** Result of {@link loadWorkerSettings}. */
export interface LoadedWorkerSettings {
  /** The resolved, validated settings. */
  settings: WorkerSettings;
  /** Things worth logging at startup that do not stop the worker (misspelt variables, a tight shutdown budget). */
  warnings: string[];
}

/**
 * The modelled time shutdown needs after the cancellation and cleanup graces: closing pools,
 * listeners and the leader connection against a backend that no longer answers (reference: ~27 s).
 */
export const SHUTDOWN_TEARDOWN_TAIL_MS = 27_000;

/** Size of the handler-side connection pool: `floor(maxConcurrency × 1.5)`. */
export function workerPoolSize(settings: Pick<WorkerSettings, 'maxConcurrency'>): number {
  return Math.floor(settings.maxConcurrency * 1.5);
}

/**
 * Modelled worst-case wall-clock time from SIGTERM to exit, in milliseconds: cancellation grace +
 * cleanup grace + {@link SHUTDOWN_TEARDOWN_TAIL_MS}. Size a container's stop grace period from this.
 */
export function worstCaseShutdownMs(
  settings: Pick<WorkerSettings, 'cancellationGracePeriodMs' | 'cleanupGracePeriodMs'>,
): number {
  return settings.cancellationGracePeriodMs + settings.cleanupGracePeriodMs + SHUTDOWN_TEARDOWN_TAIL_MS;
}

const FIELDS: readonly SettingField[] = WORKER_SETTING_FIELDS;
const FIELD_BY_KEY = new Map<Key, SettingField>(FIELDS.map((f) => [f.key, f]));

/**
 * Resolves worker settings: `overrides` beat `env`, which beats the defaults. Every value is
 * checked, then the cross-field rules; all problems are collected and thrown as one
 * {@link SettingsError}. Unset `pgDsnDirect` / `pgDsnPooled` fall back to `pgDsn`. A setting TaskQ
 * names but does not implement yet (`notAvailable` in the table, or a variable of
 * `NOT_AVAILABLE_ENV_VARS`) given a value other than its default makes it a
 * `SettingNotAvailableError` (a `SettingsError` with code `TASKQ_SETTING_NOT_AVAILABLE`).
 *
 * In the environment, a duration is a plain number of **seconds** (`10`, `2.5`) or a string with a
 * unit (`'250ms'`, `'30s'`, `'5m'`, `'2h'`, `'1d'`); booleans are true/false, 1/0, yes/no or
 * on/off; `TASKQ_QUEUES` is comma-separated; an empty (or blank) variable counts as unset.
 *
 * @throws InvalidArgumentError when `options` is not an object or has a key other than `env` and `overrides`
 * @throws SettingNotAvailableError when a setting that is not available yet is given
 * @throws SettingsError when any value or cross-field rule is broken
 */
export function loadWorkerSettings(options: LoadWorkerSettingsOptions = {}): LoadedWorkerSettings {
  checkLoadSettingsOptions(options, 'loadWorkerSettings');
  const env = options.env ?? {};
  const warnings: string[] = [];
  const { values, origins, problems } = resolveFields(FIELDS, options, 'worker setting');
  problems.push(...notAvailableEnvProblems(env));

  // Unset split DSNs use the main one (a DSN that failed its own check stays out of `values`).
  if (values.pgDsnDirect === null) values.pgDsnDirect = values.pgDsn;
  if (values.pgDsnPooled === null) values.pgDsnPooled = values.pgDsn;

  const ref = (key: Key): string => {
    const { source } = origins.get(key) as Origin;
    return `${settingName(FIELD_BY_KEY.get(key) as SettingField)} ${formatValue(key, values[key])} (${source})`;
  };
  for (const rule of CROSS_FIELD_RULES) {
    if (!rule.uses.every((k) => k in values)) continue; // already reported on its own
    const broken = rule.check(values as WorkerSettings, ref);
    if (broken === undefined) continue;
    const field = FIELD_BY_KEY.get(rule.on) as SettingField;
    const origin = origins.get(rule.on) as Origin;
    problems.push({ setting: settingName(field), source: origin.source, value: origin.raw, rule: broken });
  }

  warnings.push(...unknownEnvVarWarnings(env));
  const budgetWarning = shutdownBudgetWarning(values, ref);
  if (budgetWarning !== undefined) warnings.push(budgetWarning);

  if (problems.length > 0) throw settingsErrorFor(problems, warnings);
  return { settings: values as WorkerSettings, warnings };
}

/** What {@link resolveFields} found: parsed values by key, where each came from, and every problem. */
export interface ResolvedFields {
  values: Partial<Record<Key, unknown>>;
  origins: Map<Key, Origin>;
  problems: SettingProblem[];
}

/**
 * The per-field half of loading, shared by worker and client settings: for each field, the
 * override beats the environment, which beats the default; each value is parsed and checked, and
 * every problem is collected (not thrown). `kind` names the settings in messages ("worker setting").
 */
export function resolveFields(
  fields: readonly SettingField[],
  options: { env?: Record<string, string | undefined>; overrides?: unknown },
  kind: string,
): ResolvedFields {
  const env = options.env ?? {};
  const problems: SettingProblem[] = [];
  const byName = new Map<string, SettingField>(fields.map((f) => [settingName(f), f]));

  let overrides: Record<string, unknown> = {};
  if (options.overrides !== undefined) {
    if (isPlainObject(options.overrides)) {
      overrides = options.overrides;
    } else {
      problems.push({
        setting: 'overrides',
        source: 'settings',
        value: options.overrides,
        rule: 'must be a plain object of settings',
      });
    }
  }
  for (const key of Object.keys(overrides)) {
    if (!byName.has(key)) {
      problems.push({
        setting: key,
        source: `settings.${key}`,
        // Not echoed: a misspelt secret (`healthTokn`) would otherwise land in the message.
        value: '<redacted>',
        rule: unknownKeyRule(key, byName, kind),
      });
    }
  }

  const values: Partial<Record<Key, unknown>> = {};
  const origins = new Map<Key, Origin>();
  for (const field of fields) {
    const name = settingName(field);
    const given = Object.hasOwn(overrides, name) ? overrides[name] : undefined;
    const text = env[field.env]?.trim();
    let origin: Origin;
    let parsed: Parsed;
    if (given !== undefined) {
      origin = { source: `settings.${name}`, raw: given };
      parsed = fromOverride(field, given);
    } else if (text !== undefined && text !== '') {
      origin = { source: field.env, raw: env[field.env] };
      parsed = fromEnv(field, text);
    } else {
      origin = { source: 'default', raw: field.default };
      parsed = { ok: true, value: Array.isArray(field.default) ? [...field.default] : field.default };
    }
    // A secret (the health token) never appears in an error message or log line.
    if (field.kind === 'string' && field.secret === true && origin.source !== 'default')
      origin = { ...origin, raw: '<redacted>' };
    origins.set(field.key, origin);
    // Not implemented yet: any value but the default is refused (even one that breaks the field's
    // rule: "not available" is the more useful answer), so no one relies on a setting that does nothing.
    if (
      field.notAvailable !== undefined &&
      origin.source !== 'default' &&
      !(parsed.ok && parsed.value === field.default)
    ) {
      problems.push({
        setting: name,
        source: origin.source,
        value: origin.raw,
        rule: notAvailableRule(name, field.env, field.notAvailable, field.key),
        notAvailable: field.notAvailable,
      });
    } else if (parsed.ok) values[field.key] = parsed.value;
    else problems.push({ setting: name, source: origin.source, value: origin.raw, rule: parsed.rule });
  }
  return { values, origins, problems };
}

/** Where a resolved value came from. */
export interface Origin {
  /** Env var name, `settings.<name>` or `default`. */
  source: string;
  /** The value as given. */
  raw: unknown;
}

type Parsed = { ok: true; value: unknown } | { ok: false; rule: string };

const fail = (rule: string): Parsed => ({ ok: false, rule });

const SECONDS_RE = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;
const INT_RE = /^[+-]?\d+$/;
const FLOAT_RE = /^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i;
const BOOLEAN_WORDS: Readonly<Record<string, boolean>> = {
  true: true,
  '1': true,
  yes: true,
  on: true,
  false: false,
  '0': false,
  no: false,
  off: false,
};
const ENV_DURATION_RULE =
  "must be a number of seconds (e.g. 10 or 2.5) or a duration with a unit: '250ms', '30s', '5m', '2h', '1d'";
const INPUT_DURATION_RULE =
  "must be milliseconds (a number) or a duration string with a unit: '250ms', '30s', '5m', '2h', '1d'";

/** Parses environment text (already trimmed and non-empty). */
function fromEnv(field: SettingField, text: string): Parsed {
  switch (field.kind) {
    case 'duration': {
      if (SECONDS_RE.test(text)) {
        const parsed = checkValue(field, Number(text) * 1000);
        return parsed.ok
          ? parsed
          : fail(
              `${parsed.rule} (a plain number is seconds: ${text} = ${formatMs(Math.round(Number(text) * 1e6) / 1e3)})`,
            );
      }
      const ms = unitStringMs(text);
      return ms === undefined ? fail(ENV_DURATION_RULE) : checkValue(field, ms);
    }
    case 'integer':
      return INT_RE.test(text) ? checkValue(field, Number(text)) : fail(describeRule(field));
    case 'float':
      return FLOAT_RE.test(text) ? checkValue(field, Number(text)) : fail(describeRule(field));
    case 'boolean': {
      const word = BOOLEAN_WORDS[text.toLowerCase()];
      return word === undefined ? fail(describeRule(field)) : { ok: true, value: word };
    }
    case 'queueList':
      return checkValue(
        field,
        text.split(',').map((s) => s.trim()),
      );
    default:
      return checkValue(field, text);
  }
}

/** Parses a programmatic value (not `undefined`). */
function fromOverride(field: SettingField, value: unknown): Parsed {
  if (value === null) {
    return field.nullable === true
      ? { ok: true, value: null }
      : fail(`must not be null; ${describeRule(field)}`);
  }
  switch (field.kind) {
    case 'duration': {
      if (typeof value === 'number') return checkValue(field, value);
      const ms = typeof value === 'string' ? unitStringMs(value) : undefined;
      return ms === undefined ? fail(INPUT_DURATION_RULE) : checkValue(field, ms);
    }
    case 'integer':
    case 'float':
      return typeof value === 'number' ? checkValue(field, value) : fail(describeRule(field));
    case 'boolean':
      return typeof value === 'boolean' ? { ok: true, value } : fail('must be true or false');
    case 'queueList':
      return Array.isArray(value) && value.every((q) => typeof q === 'string')
        ? checkValue(field, value)
        : fail('must be an array of queue names');
    default:
      return typeof value === 'string'
        ? checkValue(field, value)
        : fail(`must be a string; ${describeRule(field)}`);
  }
}

/** `'30s'`-style strings only; `undefined` when the text is not one. */
function unitStringMs(text: string): number | undefined {
  try {
    // No upper bound here: checkValue applies the setting's own, with a message that names it.
    return toMs(text, 'duration', 'nonNegative', Number.POSITIVE_INFINITY);
  } catch {
    return undefined;
  }
}

/** Checks a value already of the right type against the field's constraints. */
function checkValue(field: SettingField, value: unknown): Parsed {
  switch (field.kind) {
    case 'duration':
    case 'integer':
    case 'float': {
      let n = value as number;
      if (!Number.isFinite(n)) return fail(describeRule(field));
      if (field.kind === 'integer' && !Number.isSafeInteger(n)) return fail(describeRule(field));
      // 1.1 s * 1000 is 1100.0000000000002 in floating point; keep microsecond precision only.
      if (field.kind === 'duration') n = Math.round(n * 1000) / 1000;
      const durationMax = implicitDurationMax(field);
      if (durationMax !== undefined && n > durationMax)
        return fail(`must be a duration of at most ${describeMaxMs(durationMax)}`);
      const inRange =
        (field.min === undefined || n >= field.min) &&
        (field.gt === undefined || n > field.gt) &&
        (field.max === undefined || n <= field.max) &&
        (field.lt === undefined || n < field.lt);
      return inRange ? { ok: true, value: n } : fail(describeRule(field));
    }
    case 'string': {
      const broken = field.check(value as string);
      return broken === undefined ? { ok: true, value } : fail(broken);
    }
    case 'choice': {
      const lower = (value as string).toLowerCase();
      const aliases: Readonly<Record<string, string>> = field.aliases ?? {};
      const choice = Object.hasOwn(aliases, lower) ? aliases[lower] : lower;
      return (field.choices as readonly string[]).includes(choice as string)
        ? { ok: true, value: choice }
        : fail(describeRule(field));
    }
    case 'queueList': {
      const queues: string[] = [];
      for (const q of value as string[]) {
        if (q === '') return fail('must not contain empty entries (look for a stray comma)');
        try {
          checkQueueName(q);
        } catch (err) {
          if (!(err instanceof InvalidArgumentError)) throw err;
          return fail(`queue ${JSON.stringify(q)} is invalid: ${err.rule}`);
        }
        if (!queues.includes(q)) queues.push(q);
      }
      return queues.length === 0 ? fail(describeRule(field)) : { ok: true, value: queues };
    }
    case 'boolean':
      return { ok: true, value };
  }
}

function formatValue(key: Key, value: unknown): string {
  return (FIELD_BY_KEY.get(key) as SettingField).kind === 'duration'
    ? seconds(value as number)
    : String(value);
}

/** Rules compare durations, so they share one unit: seconds (the environment's), ms below 1 s. */
function seconds(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${Math.round(ms) / 1000}s`;
}

/** A rule between settings; `check` returns the broken rule in words, naming every setting involved. */
interface CrossFieldRule {
  /** The setting the problem is reported on (the reference's choice). */
  on: Key;
  /** Every setting the rule reads; the rule is skipped when one of them was rejected on its own. */
  uses: readonly Key[];
  check(s: WorkerSettings, ref: (key: Key) => string): string | undefined;
}

/** Period of the leader loops whose staleness the watchdog checks (reference: 1 s). */
const LEADER_LOOP_PERIOD_MS = 1000;

// spec-inventory §19.4, in the reference's order.
const CROSS_FIELD_RULES: readonly CrossFieldRule[] = [
  {
    on: 'lockLeaseMs',
    uses: ['lockLeaseMs', 'heartbeatIntervalMs'],
    check: (s, ref) =>
      s.lockLeaseMs >= 4 * s.heartbeatIntervalMs
        ? undefined
        : `${ref('lockLeaseMs')} must be at least 4 × ${ref('heartbeatIntervalMs')} = ` +
          `${seconds(4 * s.heartbeatIntervalMs)}, so a lease survives 3 missed heartbeats`,
  },
  {
    on: 'cancellationGracePeriodMs',
    uses: ['cancellationGracePeriodMs', 'cleanupGracePeriodMs', 'terminationGracePeriodMs'],
    check: (s, ref) => {
      const graces = s.cancellationGracePeriodMs + s.cleanupGracePeriodMs;
      const limit = s.terminationGracePeriodMs - 5000;
      return graces < limit
        ? undefined
        : `${ref('cancellationGracePeriodMs')} + ${ref('cleanupGracePeriodMs')} = ${seconds(graces)} ` +
            `must be less than ${ref('terminationGracePeriodMs')} - 5s = ${seconds(limit)}`;
    },
  },
  {
    on: 'cancellationGracePeriodMs',
    uses: ['cancellationGracePeriodMs', 'cleanupGracePeriodMs', 'lockLeaseMs'],
    check: (s, ref) => {
      const graces = s.cancellationGracePeriodMs + s.cleanupGracePeriodMs;
      return graces < s.lockLeaseMs
        ? undefined
        : `${ref('cancellationGracePeriodMs')} + ${ref('cleanupGracePeriodMs')} = ${seconds(graces)} ` +
            `must be less than ${ref('lockLeaseMs')}`;
    },
  },
  {
    on: 'watchdogStaleFloorMs',
    uses: ['watchdogEnabled', 'watchdogTickGraceFactor', 'watchdogStaleFloorMs'],
    check: (s, ref) => {
      if (!s.watchdogEnabled) return undefined;
      const budget = staleBudgetMs(s);
      // 2 s = dispatcherCommandTimeout's own 1 s minimum + the loop period: no legal timeout fits.
      return budget > 2000
        ? undefined
        : `the leader loops' staleness budget max(1s × ${ref('watchdogTickGraceFactor')}, ` +
            `${ref('watchdogStaleFloorMs')}) = ${seconds(budget)} must be greater than 2s ` +
            `(the 1s minimum dispatcherCommandTimeout + the 1s loop period)`;
    },
  },
  {
    on: 'dispatcherCommandTimeoutMs',
    uses: [
      'watchdogEnabled',
      'watchdogTickGraceFactor',
      'watchdogStaleFloorMs',
      'dispatcherCommandTimeoutMs',
    ],
    check: (s, ref) => {
      if (!s.watchdogEnabled) return undefined;
      const budget = staleBudgetMs(s);
      if (budget <= 2000) return undefined; // reported on watchdogStaleFloor instead
      const gap = s.dispatcherCommandTimeoutMs + LEADER_LOOP_PERIOD_MS;
      return gap < budget
        ? undefined
        : `${ref('dispatcherCommandTimeoutMs')} + the 1s leader-loop period = ${seconds(gap)} must be less ` +
            `than the loops' staleness budget max(1s × ${ref('watchdogTickGraceFactor')}, ` +
            `${ref('watchdogStaleFloorMs')}) = ${seconds(budget)}, or the watchdog stops a healthy worker`;
    },
  },
  {
    on: 'watchdogLoopLagBudgetMs',
    uses: ['watchdogEnabled', 'watchdogLoopLagBudgetMs', 'heartbeatIntervalMs', 'lockLeaseMs'],
    check: (s, ref) => {
      if (!s.watchdogEnabled) return undefined;
      const sum = s.watchdogLoopLagBudgetMs + s.heartbeatIntervalMs;
      return sum < s.lockLeaseMs
        ? undefined
        : `${ref('watchdogLoopLagBudgetMs')} + ${ref('heartbeatIntervalMs')} = ${seconds(sum)} must be less ` +
            `than ${ref('lockLeaseMs')}: a stalled event loop must end the process before its leases expire`;
    },
  },
  {
    on: 'watchdogLoopLagBudgetMs',
    uses: ['watchdogEnabled', 'watchdogLoopLagBudgetMs', 'watchdogCheckIntervalMs'],
    check: (s, ref) =>
      !s.watchdogEnabled || s.watchdogLoopLagBudgetMs > s.watchdogCheckIntervalMs
        ? undefined
        : `${ref('watchdogLoopLagBudgetMs')} must be greater than ${ref('watchdogCheckIntervalMs')}: ` +
          `the detector samples the loop once per check interval, so a smaller budget trips on a healthy loop`,
  },
  {
    on: 'metricsPort',
    uses: ['metricsPort', 'otelEnabled'],
    // The endpoint would serve nothing: every instrument is off with otelEnabled false.
    check: (s, ref) =>
      s.metricsPort === null || s.otelEnabled
        ? undefined
        : `${ref('metricsPort')} needs ${ref('otelEnabled')} to be true (with it off TaskQ records no metrics)`,
  },
];

/**
 * Checks the watchdog's load-time invariants on resolved settings: the rules between settings that
 * apply while `watchdogEnabled` (the leader loops' staleness budget, `watchdogLoopLagBudget +
 * heartbeatInterval < lockLease`, `watchdogLoopLagBudget > watchdogCheckInterval`). A worker runs it
 * at start, so settings built or changed without {@link loadWorkerSettings} are held to the same
 * rules: a lag budget that outlives the lease would let a stalled worker's jobs run twice.
 *
 * @throws SettingsError naming every setting involved and its value
 */
export function checkWatchdogInvariants(settings: WorkerSettings): void {
  const ref = (key: Key): string => {
    const name = settingName(FIELD_BY_KEY.get(key) as SettingField);
    return `${name} ${formatValue(key, settings[key])} (settings.${name})`;
  };
  const problems: SettingProblem[] = [];
  for (const rule of CROSS_FIELD_RULES) {
    if (!rule.uses.includes('watchdogEnabled')) continue;
    const broken = rule.check(settings, ref);
    if (broken === undefined) continue;
    const name = settingName(FIELD_BY_KEY.get(rule.on) as SettingField);
    problems.push({ setting: name, source: `settings.${name}`, value: settings[rule.on], rule: broken });
  }
  if (problems.length > 0) throw new SettingsError(problems);
}

/** Every key of resolved {@link WorkerSettings} (durations with their `Ms` suffix). */
const RESOLVED_KEYS: readonly string[] = FIELDS.map((f) => f.key);

/**
 * Refuses keys of resolved settings (an object built or changed by hand rather than loaded, such as
 * `{ ...loaded, maxConcurency: 3 }`) that are not settings: the loader refuses them in `overrides`,
 * and here they would be ignored just as silently. Every unknown key is reported at once, as the
 * loader does, with a "did you mean" guess. A client's settings are a subset of a worker's, so a
 * worker's settings pass for a client too; `subject` words the error ("worker settings").
 *
 * @throws SettingsError naming every unknown key as `settings.<key>`
 */
export function checkResolvedSettingKeys(settings: object, subject = 'worker settings'): void {
  const problems: SettingProblem[] = [];
  for (const key of Object.keys(settings)) {
    if (RESOLVED_KEYS.includes(key)) continue;
    const guess = closestName(key, RESOLVED_KEYS, Math.max(2, Math.floor(key.length / 5)));
    problems.push({
      setting: key,
      source: `settings.${key}`,
      value: '<redacted>',
      rule:
        guess === undefined ? 'is not a TaskQ setting' : `is not a TaskQ setting (did you mean ${guess}?)`,
    });
  }
  if (problems.length > 0) throw new SettingsError(problems, [], subject);
}

/**
 * Refuses resolved settings (built or changed by hand rather than loaded) that give a setting
 * which is not available yet a value other than its default, as {@link loadWorkerSettings} does;
 * a worker runs it at construction.
 *
 * @throws SettingNotAvailableError naming every such setting, its variable and what it waits for
 */
export function checkNotAvailable(settings: WorkerSettings): void {
  const problems: SettingProblem[] = [];
  for (const field of FIELDS) {
    if (field.notAvailable === undefined) continue;
    const value: unknown = settings[field.key];
    // The loader resolves an unset pgDsnPooled to pgDsn.
    if (value === field.default || (field.key === 'pgDsnPooled' && value === settings.pgDsn)) continue;
    const name = settingName(field);
    problems.push({
      setting: name,
      source: `settings.${field.key}`,
      value,
      rule: notAvailableRule(name, field.env, field.notAvailable, field.key),
      notAvailable: field.notAvailable,
    });
  }
  if (problems.length > 0) throw settingsErrorFor(problems);
}

function staleBudgetMs(s: WorkerSettings): number {
  return Math.max(LEADER_LOOP_PERIOD_MS * s.watchdogTickGraceFactor, s.watchdogStaleFloorMs);
}

function shutdownBudgetWarning(
  values: Partial<Record<Key, unknown>>,
  ref: (key: Key) => string,
): string | undefined {
  const keys = ['terminationGracePeriodMs', 'cancellationGracePeriodMs', 'cleanupGracePeriodMs'] as const;
  if (!keys.every((k) => k in values)) return undefined;
  const s = values as WorkerSettings;
  const worst = worstCaseShutdownMs(s);
  if (s.terminationGracePeriodMs >= worst) return undefined;
  return (
    `${ref('terminationGracePeriodMs')} is below the modelled worst-case shutdown of ${seconds(worst)} ` +
    `(${ref('cancellationGracePeriodMs')} + ${ref('cleanupGracePeriodMs')} + ` +
    `${seconds(SHUTDOWN_TEARDOWN_TAIL_MS)} teardown): a shutdown against a hung backend may be cut short; ` +
    `size the container's stop grace period from ${seconds(worst)}`
  );
}

function unknownKeyRule(key: string, byName: ReadonlyMap<string, SettingField>, kind: string): string {
  if (key.endsWith('Ms') && byName.get(key.slice(0, -2))?.kind === 'duration') {
    return (
      `is not a ${kind}: durations are given without the Ms suffix, as ${key.slice(0, -2)} ` +
      "(milliseconds, or a string such as '30s')"
    );
  }
  const guess = closestName(key, byName.keys(), Math.max(2, Math.floor(key.length / 5)));
  return guess === undefined ? `is not a ${kind}` : `is not a ${kind} (did you mean ${guess}?)`;
}
