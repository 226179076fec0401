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

  /** @param subject what was being loaded, for the message ("worker settings", "client settings") */
  constructor(problems: SettingProblem[], warnings: string[] = [], subject = 'worker settings') {
    super('TASKQ_INVALID_SETTINGS', formatMessage(problems, warnings, subject));
    this.problems = problems;
    this.warnings = warnings;
  }
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
