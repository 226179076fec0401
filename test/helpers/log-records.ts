/**
 * A logger that keeps every record, for tests that check what was logged (and what never is:
 * payloads, tokens). `child()` returns the same logger: bindings are not what these tests check.
 */
import type { Logger } from '../../src/obs/logger.js';

/** One kept record. */
export interface LogRecord {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg?: string;
  obj: Record<string, unknown>;
}

/** A logger and the records it keeps, in order. */
export function recordingLogger(): { logger: Logger; records: LogRecord[] } {
  const records: LogRecord[] = [];
  const at =
    (level: LogRecord['level']) =>
    (obj: object, msg?: string): void => {
      records.push({ level, msg, obj: obj as Record<string, unknown> });
    };
  const logger: Logger = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: () => logger,
  };
  return { logger, records };
}
