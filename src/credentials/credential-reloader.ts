import { redactSecrets } from '../errors/redact-secrets.js';
import type { Logger } from '../obs/logger.js';
import type { ReloadableResource } from './reloadable-resource.js';

/** What started a reload, for the log line. */
export type ReloadTrigger = 'signal' | 'interval' | 'api';

/** How one resource fared in a reload. */
export interface ReloadOutcome {
  /** The resource's name (`pg:taskq-worker`, `redis:progress`, …). */
  readonly resource: string;
  /** The resource now serves with the fresh credential. */
  readonly ok: boolean;
  /** It did not finish within `reloadFactoryTimeout`; the previous connections keep serving. */
  readonly timedOut: boolean;
  /** Why it failed (error class and message), when it did. */
  readonly error: string | null;
  /** How long it took, in milliseconds. */
  readonly ms: number;
}

/** Options of {@link CredentialReloader}. */
export interface CredentialReloaderOptions {
  /** The resources a reload walks; read at each reload, so resources built later are included. */
  resources: () => readonly ReloadableResource[];
  /** Bound on each resource's reload, in milliseconds (`reloadFactoryTimeout`). */
  timeoutMs: number;
  /** Receives `credentials-reloaded` and `credential-reload-failed`. */
  logger: Logger;
}

class ReloadTimeout extends Error {
  constructor(ms: number) {
    super(`the reload did not finish within reloadFactoryTimeout (${ms} ms)`);
    this.name = 'ReloadTimeout';
  }
}

/**
 * Rebuilds the factory-backed connection resources with fresh credentials (SIGHUP, the
 * `reloadInterval` timer, `worker.reloadCredentials()`). Resources reload one after the other, each
 * bounded by the timeout: one that fails or hangs is reported and keeps its old connections, and
 * the rest still reload. Requests that arrive while a reload runs coalesce into one more reload
 * after it, so a burst of signals costs at most two passes and every caller sees a pass that began
 * after its request.
 */
export class CredentialReloader {
  private running: Promise<ReloadOutcome[]> | null = null;
  private queued: Promise<ReloadOutcome[]> | null = null;
  private passes = 0;

  constructor(private readonly options: CredentialReloaderOptions) {}

  /** Reload passes run so far. */
  get reloads(): number {
    return this.passes;
  }

  /** A reload pass that starts after this call; resolves with each resource's outcome. Never rejects. */
  request(trigger: ReloadTrigger): Promise<ReloadOutcome[]> {
    if (this.running === null) {
      this.running = this.runPass(trigger);
      return this.running;
    }
    this.queued ??= this.running.then(() => {
      this.queued = null;
      this.running = this.runPass(trigger);
      return this.running;
    });
    return this.queued;
  }

  private async runPass(trigger: ReloadTrigger): Promise<ReloadOutcome[]> {
    try {
      const outcomes: ReloadOutcome[] = [];
      for (const resource of this.options.resources()) outcomes.push(await this.reloadOne(resource));
      this.passes++;
      const failed = outcomes.filter((o) => !o.ok).map((o) => o.resource);
      this.options.logger.info(
        { trigger, resources: outcomes.map((o) => o.resource), failed },
        'credentials-reloaded',
      );
      return outcomes;
    } finally {
      if (this.queued === null) this.running = null;
    }
  }

  private async reloadOne(resource: ReloadableResource): Promise<ReloadOutcome> {
    const t0 = performance.now();
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = new ReloadTimeout(this.options.timeoutMs);
        abort.abort(err);
        reject(err);
      }, this.options.timeoutMs);
    });
    try {
      // The race, not only the signal, bounds the call: a resource that ignores its signal still
      // lets the reload move on (its late result is dropped).
      const reloading = resource.reload(abort.signal);
      reloading.catch(() => undefined);
      await Promise.race([reloading, timeout]);
      return { resource: resource.name, ok: true, timedOut: false, error: null, ms: performance.now() - t0 };
    } catch (err) {
      const timedOut = err instanceof ReloadTimeout;
      const error = redactSecrets(err instanceof Error ? `${err.name}: ${err.message}` : String(err));
      this.options.logger.warn(
        { resource: resource.name, timedOut, error, timeoutMs: this.options.timeoutMs },
        'credential-reload-failed',
      );
      return { resource: resource.name, ok: false, timedOut, error, ms: performance.now() - t0 };
    } finally {
      clearTimeout(timer);
    }
  }
}
