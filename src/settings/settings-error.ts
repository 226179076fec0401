import { TaskQError } from '../errors/taskq-error.js';
import { describeValue } from '../errors/invalid-argument-error.js';

/** One rejected setting value, or one broken cross-field rule. */
export interface SettingProblem {
  /**
   * Programmatic name of the setting (`lockLease`, durations without the `Ms` suffix); for an
   * unknown override key, the key as given.
   */
  setting: string;
  /**
   * Where the value came from: the environment variable (`TASKQ_LOCK_LEASE`), the override
   * (`settings.lockLease`), or `default`.
   */
  source: string;
  /** The value as given: the environment text, the override value, or the default (milliseconds for durations). */
  value: unknown;
  /** The rule the value broke, in words; cross-field rules name both settings and their values. */
  rule: string;
  /**
   * Set when the setting is one TaskQ names but does not implement yet (a value other than its
   * default was given): the reason it is not available. Such a problem makes the load throw
   * {@link SettingNotAvailableError}.
   */
  notAvailable?: string;
}

/**
 * Worker settings that cannot be used. Every problem found (bad values and broken cross-field
 * rules) is collected first and reported together, one per line of the message.
 */
export class SettingsError extends TaskQError {
  /** Every problem found, in table order, cross-field rules last. */
  readonly problems: SettingProblem[];
  /** Warnings gathered while loading (e.g. a misspelt `TASKQ_*` variable), which may explain a problem. */
  readonly warnings: string[];

  /**
   * @param subject what was being loaded, for the message ("worker settings", "client settings")
   * @param code the error code; subclasses pass their own
   */
  constructor(
    problems: SettingProblem[],
    warnings: string[] = [],
    subject = 'worker settings',
    code = 'TASKQ_INVALID_SETTINGS',
  ) {
    super(code, formatMessage(problems, warnings, subject));
    this.problems = problems;
    this.warnings = warnings;
  }
}

/**
 * Settings that cannot be used because at least one of them is a setting TaskQ names but does not
 * implement yet (cron schedules, credential providers, ...), given a value other than its default.
 * Every such problem carries `notAvailable` (the reason) and its rule names the setting, its
 * environment variable and what it waits for; the other problems found in the same load are listed
 * too. A subclass of {@link SettingsError}, so code that catches that still catches this.
 */
export class SettingNotAvailableError extends SettingsError {
  /** @param subject what was being loaded, for the message ("worker settings", "client settings") */
  constructor(problems: SettingProblem[], warnings: string[] = [], subject = 'worker settings') {
    super(problems, warnings, subject, 'TASKQ_SETTING_NOT_AVAILABLE');
  }
}

/**
 * The error for a load's problems: {@link SettingNotAvailableError} when one of them is a setting
 * that is not available yet, else {@link SettingsError}.
 */
export function settingsErrorFor(
  problems: SettingProblem[],
  warnings: string[] = [],
  subject = 'worker settings',
): SettingsError {
  return problems.some((p) => p.notAvailable !== undefined)
    ? new SettingNotAvailableError(problems, warnings, subject)
    : new SettingsError(problems, warnings, subject);
}

function formatMessage(problems: SettingProblem[], warnings: string[], subject: string): string {
  const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
  const lines = [`Invalid ${subject} (${count}); fix them and start again:`];
  for (const p of problems) {
    const where = p.source === 'default' ? `${p.setting} (default)` : p.source;
    lines.push(`  - ${where} = ${describeValue(p.value)}: ${p.rule}`);
  }
  if (warnings.length > 0) {
    lines.push('Warnings:');
    for (const w of warnings) lines.push(`  - ${w}`);
  }
  return lines.join('\n');
}
