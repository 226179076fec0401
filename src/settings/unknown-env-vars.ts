import { closestName } from '../core/closest-name.js';
import { NOT_AVAILABLE_ENV_VARS, SHARED_ENV_VARS, WORKER_SETTING_FIELDS } from './setting-fields.js';

/**
 * Every `TASKQ_*` variable some part of TaskQ reads (the worker's and the client's settings, the
 * admin UI's and single sign-on's), those other programs read, and those not available yet (which
 * the loaders refuse by themselves).
 */
const KNOWN_ENV_VARS: readonly string[] = [
  ...new Set<string>([
    ...WORKER_SETTING_FIELDS.map((f) => f.env),
    ...SHARED_ENV_VARS,
    ...NOT_AVAILABLE_ENV_VARS.map((v) => v.env),
  ]),
];
const KNOWN = new Set<string>(KNOWN_ENV_VARS);

/**
 * One warning per `TASKQ_*` variable of `env` that no part of TaskQ reads, with the closest known
 * name when one is near: `TASKQ_SCHEMA` is not a setting, and a program that went on without
 * saying so would run on the default schema. Warnings, not errors: an environment is shared with
 * other programs, and a variable left over from an older release must not stop a deployment.
 * Sorted by name, so the same environment gives the same lines.
 */
export function unknownEnvVarWarnings(env: Readonly<Record<string, string | undefined>>): string[] {
  const warnings: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('TASKQ_') || env[name] === undefined || KNOWN.has(name)) continue;
    const guess =
      closestName(name, KNOWN_ENV_VARS, Math.max(2, Math.floor(name.length / 8))) ?? extensionOf(name);
    warnings.push(
      `${name} is not a TaskQ setting and is ignored` +
        (guess === undefined ? '' : ` (did you mean ${guess}?)`),
    );
  }
  return warnings;
}

/**
 * The shortest known variable that `name` is the start of, word by word (`TASKQ_SCHEMA` →
 * `TASKQ_SCHEMA_NAME`, `TASKQ_REDIS` → `TASKQ_REDIS_URL`): a dropped last word is too far from the
 * name for an edit distance to find it.
 */
function extensionOf(name: string): string | undefined {
  let best: string | undefined;
  for (const known of KNOWN_ENV_VARS)
    if (known.startsWith(`${name}_`) && (best === undefined || known.length < best.length)) best = known;
  return best;
}
