import { pino } from 'pino';

import { formatConsoleLine } from './console-format.js';

/**
 * The logging surface TaskQ uses: pino's method shape (`logger.warn({ ...fields }, 'event-name')`),
 * so a pino logger can be passed straight in. Event names are stable kebab-case strings.
 */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

/** Options of {@link createLogger}. */
export interface CreateLoggerOptions {
  /** Lowest level written (pino's names). Default `info`. */
  level?: string;
  /** The `name` field of every record. Default `taskq`. */
  name?: string;
  /**
   * `json` (default): one pino JSON record per line. `console`: one readable line per record (time,
   * level, event, `key=value` fields; see docs/logging.md), for people reading a terminal.
   */
  format?: 'json' | 'console';
  /** Where lines go (anything with `write(line)`). Default: stdout, written synchronously. */
  destination?: { write(line: string): unknown };
}

/**
 * The worker's default logger (`settings.logLevel`, `settings.logFormat`): pino, to stdout. The
 * console format is pino's JSON record reformatted line by line (its cost is paid only where
 * someone reads a terminal).
 */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const opts = { name: options.name ?? 'taskq', level: options.level ?? 'info' };
  if (options.format === 'console') {
    const out = options.destination ?? pino.destination({ dest: 1, sync: true });
    return pino(opts, { write: (line: string) => out.write(formatConsoleLine(line)) }) as unknown as Logger;
  }
  if (options.destination) return pino(opts, options.destination as never) as unknown as Logger;
  return pino(opts) as unknown as Logger;
}

/** A logger that drops everything (tests, embedded use). */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};
