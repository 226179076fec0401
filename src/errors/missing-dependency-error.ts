import { TaskQError } from './taskq-error.js';

/**
 * A feature needs an optional package that is not installed (TaskQ keeps heavy parts that only
 * some users need, such as the embedded Postgres, out of every install). The message names the
 * package and the command that installs it; the module-resolution error is kept as `cause`.
 */
export class MissingDependencyError extends TaskQError {
  /** The npm package to install, e.g. `@electric-sql/pglite`. */
  readonly packageName: string;
  /** What needs it, in words. */
  readonly feature: string;

  /**
   * @param install the command that installs it, e.g. `npm install -D @electric-sql/pglite`
   * @param alternative what to do instead, when there is something (appended to the message)
   */
  constructor(
    packageName: string,
    feature: string,
    install: string,
    options: { alternative?: string; cause?: unknown } = {},
  ) {
    super(
      'TASKQ_MISSING_DEPENDENCY',
      `${feature} needs the package ${packageName}, which is not installed. Install it: ${install}` +
        (options.alternative ? `; or ${options.alternative}` : ''),
      { cause: options.cause },
    );
    this.packageName = packageName;
    this.feature = feature;
  }
}

/** True when `err` says that `packageName` itself (not something it imports) could not be found. */
export function isPackageNotFound(err: unknown, packageName: string): boolean {
  if (err === null || typeof err !== 'object') return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  return typeof message === 'string' && message.includes(`'${packageName}'`);
}
