import { pino } from 'pino';

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

/** The default logger: pino at `TASKQ_LOG_LEVEL`-independent level `info`, JSON to stdout. */
export function createLogger(options: { level?: string; name?: string } = {}): Logger {
  return pino({ name: options.name ?? 'taskq', level: options.level ?? 'info' }) as unknown as Logger;
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
