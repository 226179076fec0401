/**
 * The logger of the harness's TaskQ worker processes: warnings and errors on stderr (the harness
 * shows the tail when a worker fails), debug and info dropped.
 */
import type { Logger } from '../../src/obs/logger.js';

/** A stderr logger that counts its warnings and writes the first `maxWarnings` of them. */
export interface StderrLogger extends Logger {
  /** Warnings logged so far, written or not. */
  readonly warnings: number;
}

export function stderrLogger(maxWarnings = Infinity): StderrLogger {
  let warnings = 0;
  const logger: StderrLogger = {
    get warnings() {
      return warnings;
    },
    debug() {},
    info() {},
    warn(obj, msg) {
      warnings++;
      if (warnings <= maxWarnings) process.stderr.write(`[taskq warn] ${msg ?? ''} ${safeJson(obj)}\n`);
    },
    error(obj, msg) {
      process.stderr.write(`[taskq error] ${msg ?? ''} ${safeJson(obj)}\n`);
    },
    child() {
      return logger;
    },
  };
  return logger;
}

/** A log record's fields as one bounded line (errors by their message). */
function safeJson(obj: object): string {
  try {
    return JSON.stringify(obj, (_k, v: unknown) => (v instanceof Error ? v.message : v)).slice(0, 500);
  } catch {
    return '';
  }
}
