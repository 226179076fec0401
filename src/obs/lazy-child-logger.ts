import type { JobLogFields, JobScopedLogger } from './job-log-context.js';
import type { Logger } from './logger.js';

type Level = 'debug' | 'info' | 'warn' | 'error';

/**
 * A child logger made on its first use. The worker gives every attempt a logger bound to its job
 * ({@link JobLogFields}: id, actor, queue, attempt, trace id); most attempts never log, and making a
 * pino child serialises its bindings up front. Calls at a level the parent has switched off (pino's
 * `isLevelEnabled`) are dropped without making the child.
 */
export class LazyChildLogger implements JobScopedLogger {
  private made: Logger | null = null;

  constructor(
    private readonly parent: Logger,
    /** The bindings every line of this logger carries. */
    readonly fields: JobLogFields,
  ) {}

  private enabled(level: Level): boolean {
    const check = (this.parent as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled;
    return typeof check !== 'function' || check.call(this.parent, level);
  }

  private get logger(): Logger {
    return (this.made ??= this.parent.child(this.fields as unknown as Record<string, unknown>));
  }

  debug(obj: object, msg?: string): void {
    if (this.enabled('debug')) this.logger.debug(obj, msg);
  }

  info(obj: object, msg?: string): void {
    if (this.enabled('info')) this.logger.info(obj, msg);
  }

  warn(obj: object, msg?: string): void {
    if (this.enabled('warn')) this.logger.warn(obj, msg);
  }

  error(obj: object, msg?: string): void {
    if (this.enabled('error')) this.logger.error(obj, msg);
  }

  child(bindings: Record<string, unknown>): Logger {
    return this.logger.child(bindings);
  }
}
