import type { CronDeclaration, PayloadFactory } from '../cron/cron-declaration.js';
import { checkDeclaredSchedules, createDeclaredSchedules } from './declared-schedules.js';
import { hostname } from 'node:os';

import type { AnyActor } from '../core/actor.js';
import type { Backend } from '../backend/backend.js';
import { openCredentialedWorkerBackend, openWorkerBackend } from '../backend/open-backend.js';
import type { Driver } from '../db/driver.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { newJobId } from '../core/ids.js';
import { checkKnownKeys } from '../core/closest-name.js';
import type { Logger } from '../obs/logger.js';
import { createLogger } from '../obs/logger.js';
import {
  checkNotAvailable,
  checkResolvedSettingKeys,
  checkWatchdogInvariants,
  loadWorkerSettings,
  type WorkerSettingsInput,
} from '../settings/load-worker-settings.js';
import type { WorkerSettings } from '../settings/worker-settings.js';
import { ActorConfigDriftList } from '../errors/actor-config-errors.js';
import { Completer, MAX_SETTLE_BACKLOG, MAX_SETTLE_WRITES_IN_FLIGHT } from './completer.js';
import { DrainMonitor } from './drain-monitor.js';
import { NullErrorReporter, type ErrorReporter } from './error-reporter.js';
import { Heartbeat } from './heartbeat.js';
import { JobRunner } from './job-runner.js';
import { SubJobEnvironment } from './sub-job-environment.js';
import { NotifyListener } from './notify-listener.js';
import { MAX_CLAIMS_IN_FLIGHT, Producer } from './producer.js';
import { ProgressFlusher, ProgressTracker } from './progress-tracker.js';
import { CancelController } from './cancel-controller.js';
import { ThreadPool } from './threads/thread-pool.js';
import type { ProgressPublisher } from '../progress/progress-event.js';
import { RedisProgressPublisher } from '../progress/redis-progress-publisher.js';
import { interruptibleSleep } from './sleep.js';
import { MaintenanceLeader } from './maintenance/maintenance-leader.js';
import { TASKQ_VERSION } from '../core/version.js';
import { SystemClock } from '../core/clock.js';
import { RateLimitRegistry } from '../ratelimit/registry.js';
import { RateLimitGate, type QueueCap } from './rate-limit-gate.js';
import { RateLimitSweeper } from './rate-limit-sweeper.js';
import type { Redis } from 'ioredis';
import type { PgCredentialProvider, RedisCredentialProvider } from '../credentials/credential-types.js';
import { CredentialReloader, type ReloadOutcome } from '../credentials/credential-reloader.js';
import type { ReloadableResource } from '../credentials/reloadable-resource.js';
import { ReloadTimer } from '../credentials/reload-timer.js';
import { WorkerRedisCredentials } from './worker-redis-credentials.js';
import { Watchdog } from './watchdog/watchdog.js';
import type { HealthServer } from '../obs/health/health-server.js';
import { openWorkerHealth } from '../obs/health/open-worker-health.js';
import { ReadinessChecks } from '../obs/health/readiness-checks.js';
import type { Meter } from '@opentelemetry/api';
import type { PrometheusEndpoint } from '../obs/metrics/prometheus-endpoint.js';
import {
  openWorkerMetricsEndpoint,
  startWorkerFleetGauges,
  workerMeter,
} from '../obs/metrics/open-worker-metrics.js';
import { WorkerMetrics } from '../obs/metrics/worker-metrics.js';
import type { Providers } from '../di/providers.js';
import { validateDependencies } from '../di/validate-dependencies.js';
import { WorkerDependencies } from '../di/worker-dependencies.js';
import { JobScope } from './job-scope.js';

/** Where the worker is in its life. Shutdown moves strictly forward through the phases. */
export type WorkerPhase =
  'created' | 'starting' | 'running' | 'draining' | 'cancelling' | 'forcing' | 'abandoning' | 'stopped';

/** Why a worker stopped (`watchdog`: a service loop ended while the worker ran; see docs/worker.md). */
export type StopReason = 'requested' | 'idle' | 'idle-timeout' | 'fatal' | 'watchdog';

/** Options of {@link Worker}. */
export interface WorkerOptions {
  /** The actors this worker runs (it claims only their jobs). */
  actors: readonly AnyActor[];
  /** Resolved settings, or an input object merged over the defaults (the environment is not read). */
  settings?: WorkerSettings | WorkerSettingsInput;
  /** Run on this backend (e.g. `InMemoryBackend` in tests) instead of connecting to `pgDsn`. */
  backend?: Backend;
  /** Run on this driver (e.g. the embedded PGlite driver) instead of connecting to `pgDsn`. */
  driver?: Driver;
  /** Logger; default pino at `settings.logLevel`, in `settings.logFormat` (see docs/logging.md). */
  logger?: Logger;
  /** Receives jobs that failed for good. */
  errorReporter?: ErrorReporter;
  /** Stop (exit reason `idle`) once the queues stay empty for `idleSettleWindow`. */
  untilIdle?: boolean;
  /** Worker id (UUID). Default: a new UUIDv7. */
  workerId?: string;
  /**
   * Live progress publisher; yours (the worker does not close it). Default: a Redis publisher built
   * from `settings.redisUrl` (closed at shutdown), or none (progress is still written to Postgres).
   */
  progressPublisher?: ProgressPublisher;
  /**
   * Where actors' rate-limit and reservation names resolve. Register shared primitives here; the
   * worker adds the instances actors declare and the queue caps. Default: a new registry.
   */
  rateLimitRegistry?: RateLimitRegistry;
  /** Redis client for Redis-backed rate limits (yours; not closed). Default: one from `settings.redisUrl`. */
  redis?: Redis;
  /**
   * Cron schedules declared in code (`cron()`), of actors of this worker: created at start when
   * `(actor, name)` has none, never overwritten (a changed declaration is logged as
   * `cron-declaration-drift`; see docs/cron.md).
   */
  schedules?: readonly CronDeclaration[];
  /** Payload factories by name, for schedules created at run time with `payloadFactory: '<name>'`. */
  payloadFactories?: Readonly<Record<string, PayloadFactory>>;
  /**
   * Fetches the Postgres password (and optionally the user) for every connection the worker opens
   * from `pgDsn`, instead of a password in the DSN; see docs/credentials.md.
   */
  pgCredentialProvider?: PgCredentialProvider;
  /** Fetches the Redis ACL credential for the Redis clients the worker builds from `redisUrl`; see docs/credentials.md. */
  redisCredentialProvider?: RedisCredentialProvider;
  /**
   * Providers of the values actors `inject` (see docs/dependencies.md). Checked when the worker is
   * constructed (cycles, scope violations, missing providers: all reported at once); process- and
   * worker-scoped values are made at start and torn down at stop, job-scoped ones per attempt.
   * Default: none (an actor that injects anything is then a `MissingProvider`).
   */
  providers?: Providers;
}

/** The keys of {@link WorkerOptions}: any other is refused, so a misspelt option is not ignored. */
export const WORKER_OPTION_KEYS: readonly string[] = [
  'actors',
  'settings',
  'backend',
  'driver',
  'logger',
  'errorReporter',
  'untilIdle',
  'workerId',
  'progressPublisher',
  'rateLimitRegistry',
  'redis',
  'schedules',
  'payloadFactories',
  'pgCredentialProvider',
  'redisCredentialProvider',
  'providers',
];

function isResolved(s: WorkerSettings | WorkerSettingsInput | undefined): s is WorkerSettings {
  return (
    s !== undefined && 'heartbeatIntervalMs' in s && 'lockLeaseMs' in s && 'queues' in s && 'schema' in s
  );
}

/**
 * The worker's composition root: it wires the producer, runner, completer, heartbeat, notify
 * listener and (in until-idle mode) drain monitor, and orchestrates shutdown. It holds no SQL and
 * no retry logic of its own.
 *
 * ```ts
 * const worker = new Worker({ actors: [sendEmail], settings: { pgDsn, queues: ['emails'] } });
 * await worker.start();
 * // ... later
 * await worker.stop();
 * ```
 */
export class Worker {
  readonly workerId: string;
  readonly settings: WorkerSettings;
  readonly logger: Logger;
  /** Resolves when the worker has fully stopped, with the reason. */
  readonly stopped: Promise<StopReason>;
  /**
   * Readiness checks of your own for `/ready` (`worker.health.registerReadinessCheck(name, check)`),
   * before or after `start()`; see docs/worker.md, "Health endpoints".
   */
  readonly health = new ReadinessChecks();
  private resolveStopped!: (r: StopReason) => void;
  private currentPhase: WorkerPhase = 'created';
  private readonly actors: Map<string, AnyActor>;
  private readonly declared: readonly CronDeclaration[];
  private readonly factories = new Map<string, PayloadFactory>();
  private readonly options: WorkerOptions;
  private backend!: Backend;
  /** The backend was built here (from `pgDsn`): the worker closes it. */
  private ownsBackend = false;
  private runner!: JobRunner;
  private completer!: Completer;
  /** What handlers' `ctx.jobs` enqueue with (its client and cache are made on first use). */
  private subJobs: SubJobEnvironment | null = null;
  private producer!: Producer;
  private heartbeat!: Heartbeat;
  private listener: NotifyListener | null = null;
  private drainMonitor: DrainMonitor | null = null;
  private maintenance!: MaintenanceLeader;
  private tracker!: ProgressTracker;
  private threads: ThreadPool | null = null;
  private flusher!: ProgressFlusher;
  private publisher: ProgressPublisher | null = null;
  private ownedPublisher: ProgressPublisher | null = null;
  private cancels!: CancelController;
  private limits: RateLimitGate | null = null;
  private limitSweeper: RateLimitSweeper | null = null;
  private stopping: Promise<void> | null = null;
  private stopReason: StopReason = 'requested';
  private escalateNow: (() => void) | null = null;
  private escalated = false;
  private hangDetector: Watchdog | null = null;
  private healthListeners: HealthServer | null = null;
  /** With `otelEnabled`: the `metricsPort` endpoint's meter, or the global one if registered. */
  private meter: Meter | null = null;
  private metricsEndpoint: PrometheusEndpoint | null = null;
  /** The injected values' owner, when the worker has providers (made at start). */
  private dependencies: WorkerDependencies | null = null;
  private workerMetrics: WorkerMetrics | null = null;
  /** NOTIFY deliveries and error-reporter failures since start, read by the metrics. */
  private readonly notifyCounts = { received: 0, cancelReceived: 0 };
  private readonly reporterFailures = new Map<string, number>();
  /** Connection resources built from credential providers: what a credential reload rebuilds. */
  private readonly reloadables: ReloadableResource[] = [];
  private readonly reloader: CredentialReloader;
  private readonly redisCredentials: WorkerRedisCredentials;
  private reloadTimer: ReloadTimer | null = null;

  constructor(options: WorkerOptions) {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('worker.options', options, 'must be an object ({ actors, ... })');
    // Before the actors check: `actor` for `actors` is better answered by its "did you mean".
    checkKnownKeys(options, WORKER_OPTION_KEYS, 'worker', 'an option of new Worker()');
    if (!Array.isArray(options.actors) || options.actors.length === 0) {
      throw new InvalidArgumentError('worker.actors', options.actors, 'must be a non-empty array of actors');
    }
    const given: unknown = options.settings;
    if (given !== undefined && (given === null || typeof given !== 'object' || Array.isArray(given)))
      throw new InvalidArgumentError('worker.settings', given, 'must be an object of settings');
    this.options = options;
    if (isResolved(options.settings)) {
      // Not loaded: held to the loader's refusal of unknown keys and of settings not available yet.
      checkResolvedSettingKeys(options.settings);
      checkNotAvailable(options.settings);
      this.settings = options.settings;
    } else {
      this.settings = loadWorkerSettings({ overrides: options.settings ?? {} }).settings;
    }
    this.workerId = (options.workerId ?? newJobId()).toLowerCase();
    this.logger = (
      options.logger ?? createLogger({ level: this.settings.logLevel, format: this.settings.logFormat })
    ).child({
      workerId: this.workerId,
    });
    this.actors = new Map();
    for (const a of options.actors) {
      if (!a || typeof a.name !== 'string' || typeof a.handler !== 'function') {
        throw new InvalidArgumentError(
          'worker.actors',
          a,
          'every entry must be an actor declared with actor()',
        );
      }
      const other = this.actors.get(a.name);
      if (other && other !== a)
        throw new InvalidArgumentError('worker.actors', a.name, 'two different actors share this name');
      this.actors.set(a.name, a);
    }
    this.declared = checkDeclaredSchedules(options.schedules, this.actors);
    validateDependencies(options.providers ?? null, this.actors.values());
    for (const [name, fn] of Object.entries(options.payloadFactories ?? {})) {
      if (typeof fn !== 'function')
        throw new InvalidArgumentError(`worker.payloadFactories.${name}`, fn, 'must be a function');
      this.factories.set(name, fn);
    }
    for (const d of this.declared)
      if (d.payloadFactory) this.factories.set(d.payloadFactoryName!, d.payloadFactory);
    this.stopped = new Promise((resolve) => {
      this.resolveStopped = resolve;
    });
    this.redisCredentials = WorkerRedisCredentials.check(
      options.redisCredentialProvider,
      this.settings.redisUrl,
      this.logger,
      this.reloadables,
    );
    this.reloader = new CredentialReloader({
      resources: () => this.reloadables,
      timeoutMs: this.settings.reloadFactoryTimeoutMs,
      logger: this.logger,
    });
  }

  /** The current lifecycle phase. */
  get phase(): WorkerPhase {
    return this.currentPhase;
  }

  /** Jobs currently holding a slot. */
  get inFlight(): number {
    return this.runner?.inFlight ?? 0;
  }

  /** The backend the worker claims from (for tests and tooling). */
  get jobsBackend(): Backend {
    return this.backend;
  }

  /** True while this worker is the maintenance leader. */
  get isLeader(): boolean {
    return this.maintenance?.isLeader ?? false;
  }

  /** The maintenance loops (for tests and tooling: each has `runOnce()`). */
  get maintenanceLeader(): MaintenanceLeader {
    return this.maintenance;
  }

  /** The watchdog, when `watchdogEnabled` and started (trip counters by detector, loop ages). */
  get watchdog(): Watchdog | null {
    return this.hangDetector;
  }

  /** The health listeners, when `healthEnabled` or `healthPort` and started (addresses, for tests and tooling). */
  get healthServer(): HealthServer | null {
    return this.healthListeners;
  }

  /** The Prometheus endpoint, when `metricsPort` is set and the worker started (its address, for tests and tooling). */
  get metricsServer(): PrometheusEndpoint | null {
    return this.metricsEndpoint;
  }

  /**
   * Rebuilds the connections the worker built from credential providers (`pgCredentialProvider`,
   * `redisCredentialProvider`) with fresh credentials, as SIGHUP and `reloadInterval` do: new
   * connections use the new credential, open ones finish what they run and close, jobs in flight
   * are unaffected. Each resource is bounded by `reloadFactoryTimeout`; one that fails keeps its
   * old connections and is reported in the outcome (and the `credential-reload-failed` log line).
   * Calls during a reload coalesce into one more pass. Resolves with an empty list when the worker
   * has nothing built from a provider, or is not running.
   */
  reloadCredentials(): Promise<ReloadOutcome[]> {
    if (this.currentPhase === 'created' || this.currentPhase === 'stopped') return Promise.resolve([]);
    return this.reloader.request('api');
  }

  /** SIGHUP: like {@link reloadCredentials}, logged as signal-triggered. */
  reloadOnSignal(): Promise<ReloadOutcome[]> {
    if (this.currentPhase === 'created' || this.currentPhase === 'stopped') return Promise.resolve([]);
    return this.reloader.request('signal');
  }

  /** The notify listener, when NOTIFY is enabled (for tests and health checks). */
  get notifyListener(): NotifyListener | null {
    return this.listener;
  }

  /**
   * The given backend, or one built from the driver or `pgDsn` (then owned by the worker). With
   * `pgCredentialProvider`, every pool authenticates through it and is added to the reloadables.
   */
  private async buildBackend(): Promise<void> {
    const s = this.settings;
    if (this.options.pgCredentialProvider && (this.options.backend || this.options.driver))
      throw new InvalidArgumentError(
        'pgCredentialProvider',
        '(a provider)',
        'authenticates the pools the worker builds from pgDsn: give it without backend or driver',
      );
    if (this.options.backend) {
      this.backend = this.options.backend;
      return;
    }
    if (!this.options.driver && !(s.pgDsnDirect ?? s.pgDsn))
      throw new InvalidArgumentError('pgDsn', null, 'a worker needs TASKQ_PG_DSN (or a backend/driver)');
    const pools = {
      dsn: s.pgDsnDirect ?? s.pgDsn,
      settings: s,
      claimConnections: MAX_CLAIMS_IN_FLIGHT,
      settleConnections: MAX_SETTLE_WRITES_IN_FLIGHT,
      logger: this.logger,
    };
    const provider = this.options.pgCredentialProvider;
    if (provider && !this.options.driver) {
      const built = await openCredentialedWorkerBackend({ ...pools, pgCredentialProvider: provider });
      this.backend = built.backend;
      this.reloadables.push(...built.reloadables);
    } else {
      this.backend = openWorkerBackend({
        ...pools,
        ...(this.options.driver ? { driver: this.options.driver } : {}),
      });
    }
    this.ownsBackend = !this.options.driver;
  }

  /**
   * Starts every service. Before claiming anything it checks the schema (unmigrated or too new:
   * refuse) and syncs `actor_config` (structural drift: refuse unless `forceUpdateActorConfig`).
   */
  async start(): Promise<void> {
    if (this.currentPhase !== 'created')
      throw new InvalidArgumentError('worker.start', this.currentPhase, 'a worker starts once');
    this.currentPhase = 'starting';
    const s = this.settings;
    try {
      this.startWatchdog();
      await this.startHealth();
      await this.startMetrics();
      await this.buildBackend();
      this.startFleetGauges();
      await this.backend.verifySchema();
      const drifts = await this.backend.syncActorConfig(
        [...this.actors.values()].map((a) => ({
          actor: a.name,
          queue: a.queue,
          metadata: { ...a.metadata },
        })),
        {
          force: s.forceUpdateActorConfig,
          // An operator deregistered these actors; this worker still runs them, so says so.
          reregistered: (actors) => {
            for (const actor of actors) this.logger.warn({ actor }, 'actor-reregistered');
          },
        },
      );
      if (drifts.length > 0) {
        if (!s.forceUpdateActorConfig) throw new ActorConfigDriftList(drifts);
        this.logger.warn({ drifts }, 'actor-config-drift-overwritten');
      }
      await createDeclaredSchedules(this.backend, this.declared, s.payloadMaxBytes, this.logger);
      if (this.options.providers) {
        const deps = new WorkerDependencies(this.options.providers, this.actors, this.logger);
        await deps.start();
        this.dependencies = deps;
      }
      await this.startLimits();
      // A table filled in a burst before this start has no planner statistics yet.
      await this.backend.refreshStatistics?.();
      await this.backend.registerWorker({
        workerId: this.workerId,
        hostname: hostname(),
        pid: process.pid,
        label: s.workerLabel,
        queues: s.queues,
        maxConcurrency: s.maxConcurrency,
        version: TASKQ_VERSION,
      });
    } catch (err) {
      this.currentPhase = 'stopped';
      await this.limits?.close().catch(() => undefined);
      await this.dependencies?.close();
      await this.closeOwned();
      await this.metricsEndpoint?.close();
      await this.healthListeners?.stop();
      await this.hangDetector?.stop();
      this.resolveStopped('fatal');
      throw err;
    }

    try {
      await (this.hangDetector
        ? this.hangDetector.observeLoops(() => this.startServices())
        : this.startServices());
    } catch (err) {
      await this.abortStart();
      throw err;
    }
    this.currentPhase = 'running';
    this.logger.info(
      { queues: s.queues, actors: [...this.actors.keys()], maxConcurrency: s.maxConcurrency },
      'worker-started',
    );
    if (s.migrateOnStart)
      // Only `taskq ui serve` migrates: replicas racing to migrate is what migrations must avoid.
      this.logger.warn(
        { setting: 'TASKQ_MIGRATE_ON_START', instead: 'npx taskq migrate up (a pre-deploy step)' },
        'migrate-on-start-ignored',
      );
  }

  /**
   * The watchdog (when enabled), started before anything connects so a startup that blocks the
   * event loop is caught once the startup grace ends. Its invariants are checked here too, for
   * settings that did not come through `loadWorkerSettings()`.
   */
  private startWatchdog(): void {
    const s = this.settings;
    if (!s.watchdogEnabled) return;
    checkWatchdogInvariants(s);
    this.hangDetector = new Watchdog({
      settings: s,
      workerId: this.workerId,
      logger: this.logger,
      describeWorker: () => ({
        phase: this.currentPhase,
        inFlight: this.runner?.inFlight ?? 0,
        jobs: this.runner?.ownedJobIds().slice(0, 100) ?? [],
      }),
      isStopping: () => this.stopping !== null || this.currentPhase === 'stopped',
      onSiblingBroke: (reason) => {
        this.logger.error({ reason }, 'worker-self-terminating');
        void this.stop('watchdog');
      },
    });
    this.hangDetector.start();
  }

  /**
   * The health endpoints, opened before anything connects so `/live` answers (and `/ready` says
   * `starting`) during a slow start; a TCP port that cannot be bound fails the start.
   */
  private async startHealth(): Promise<void> {
    this.healthListeners = await openWorkerHealth(
      this.settings,
      {
        phase: () => this.currentPhase,
        ping: () => this.backend.ping(),
        checks: this.health,
        tasks: () => this.describeTasks(),
      },
      this.logger,
    );
  }

  /**
   * The worker's instruments (with `otelEnabled`): on the `metricsPort` endpoint's own meter
   * provider when that is set, else on the global one when you registered one before the start.
   */
  private async startMetrics(): Promise<void> {
    const s = this.settings;
    if (!s.otelEnabled) return;
    this.metricsEndpoint = await openWorkerMetricsEndpoint(s, this.logger);
    this.meter = workerMeter(this.metricsEndpoint);
    if (this.meter === null) return;
    this.workerMetrics = new WorkerMetrics(this.meter, {
      slots: s.maxConcurrency,
      jobsActive: () => this.runner?.inFlight ?? 0,
      isLeader: () => this.isLeader,
      notify: () =>
        this.listener === null
          ? null
          : {
              connected: this.listener.connected,
              reconnects: this.listener.reconnects,
              ...this.notifyCounts,
            },
      cancelTransitions: () => this.cancels?.transitions ?? new Map(),
      deadlineFailed: () => this.maintenance?.sweeps.deadlineFailedTotal ?? 0,
      leaderLoopUnexpectedErrors: () => this.maintenance?.unexpectedErrors() ?? new Map(),
      watchdogTrips: () => this.hangDetector?.trips ?? null,
      loopAges: () =>
        this.hangDetector?.loopAges().map((l) => ({ loop: l.loop, ageSeconds: l.ageMs / 1000 })) ?? null,
      reporterFailures: () => this.reporterFailures,
    });
  }

  /** The fleet gauges (queue depth, alive workers, reservations, leaders), read on collection. */
  private startFleetGauges(): void {
    if (this.meter !== null)
      startWorkerFleetGauges(this.meter, this.backend, this.settings, this.actors.values(), this.logger);
  }

  /** `/tasks`: what this worker holds and how its loops fare; ids and names only, never payloads. */
  private describeTasks(): Record<string, unknown> {
    return {
      workerId: this.workerId,
      phase: this.currentPhase,
      inFlight: this.runner?.inFlight ?? 0,
      jobs: this.runner?.describeJobs() ?? [],
      // Which service loops run, and (with the watchdog on) how long since each ticked.
      services: {
        heartbeat: this.heartbeat?.running ?? false,
        progressFlusher: this.flusher?.running ?? false,
        rateLimitSweeper: this.limitSweeper?.running ?? null,
        drainMonitor: this.drainMonitor?.running ?? null,
      },
      loops: this.hangDetector?.loopAges() ?? null,
      notifyConnected: this.listener?.connected ?? null,
      leader: this.isLeader,
      pid: process.pid,
    };
  }

  /** Queue caps of the subscribed queues (`queues.max_concurrent`, read once at start). */
  private async queueCaps(): Promise<QueueCap[]> {
    const rows = await this.backend.listQueues();
    const subscribed = new Set(this.settings.queues);
    return rows
      .filter((r) => subscribed.has(r.name) && r.maxConcurrent !== null)
      .map((r) => ({ queue: r.name, maxConcurrent: r.maxConcurrent! }));
  }

  /** Rate limits, reservations and queue caps: resolved and synced before anything is claimed. */
  private async startLimits(): Promise<void> {
    const caps = await this.queueCaps();
    if (!this.options.rateLimitRegistry && !RateLimitGate.wanted(this.actors.values(), caps)) return;
    const s = this.settings;
    const stores = this.backend.rateLimitStores({
      redis: this.options.redis ?? null,
      redisUrl: s.redisUrl,
      redisCredentials: this.options.redis ? null : this.redisCredentials.forClient('redis:ratelimit'),
      pgFallback: s.rateLimitPgFallbackEnabled,
      logger: this.logger.child({ component: 'ratelimit' }),
    });
    this.limits = new RateLimitGate({
      registry:
        this.options.rateLimitRegistry ??
        new RateLimitRegistry({
          maxKeyedRateLimits: s.maxKeyedRateLimits,
          maxKeyedReservations: s.maxKeyedReservations,
          logger: this.logger,
        }),
      actors: this.actors,
      workerId: this.workerId,
      settings: s,
      stores,
      closeStores: true,
      clock: new SystemClock(),
      logger: this.logger,
    });
    await this.limits.start(caps);
  }

  private async startServices(): Promise<void> {
    const s = this.settings;
    this.completer = new Completer(this.backend, this.logger);
    if ([...this.actors.values()].some((a) => a.thread !== null)) this.threads = new ThreadPool(this.logger);
    this.publisher = this.options.progressPublisher ?? null;
    if (!this.publisher && s.redisUrl) {
      this.publisher = this.ownedPublisher = new RedisProgressPublisher({
        redisUrl: s.redisUrl,
        redisCredentials: this.redisCredentials.forClient('redis:progress'),
        schema: s.schema,
        publishGlobal: s.progressPublishGlobal,
        logger: this.logger,
      });
    }
    this.tracker = new ProgressTracker(this.workerId, s.progressDataMaxBytes, this.logger, this.publisher);
    this.subJobs = new SubJobEnvironment(
      this.backend,
      {
        payloadMaxBytes: s.payloadMaxBytes,
        idempotencyKeyMaxBytes: s.idempotencyKeyMaxBytes,
        otelEnabled: s.otelEnabled,
      },
      this.logger,
    );
    this.runner = new JobRunner({
      actors: this.actors,
      workerId: this.workerId,
      settings: s,
      completer: this.completer,
      logger: this.logger,
      reporter: this.options.errorReporter ?? new NullErrorReporter(),
      tracker: this.tracker,
      onCapacity: () => this.producer?.capacityFreed(),
      onRescheduled: () => this.maintenance?.promoter.notify(),
      onActorDenied: (actor, retryInMs) => this.producer?.pauseActor(actor, retryInMs),
      onActorAdmitted: (actor) => this.producer?.actorAdmitted(actor),
      readRow: (jobId) => this.backend.get(jobId),
      threads: this.threads,
      publisher: this.publisher,
      limits: this.limits,
      markStarted: (jobIds) => this.backend.markStarted(this.workerId, jobIds),
      metrics: this.workerMetrics,
      onReporterFailed: (type) => this.reporterFailures.set(type, (this.reporterFailures.get(type) ?? 0) + 1),
      subJobs: this.subJobs,
      jobScope: this.dependencies ? new JobScope(this.dependencies) : null,
    });
    this.flusher = new ProgressFlusher(this.backend, this.tracker, s.progressCoalesceIntervalMs, this.logger);
    this.cancels = new CancelController(
      this.backend,
      this.runner,
      this.workerId,
      { cancellationMs: s.cancellationGracePeriodMs, cleanupMs: s.cleanupGracePeriodMs },
      this.logger,
      () => this.heartbeat?.notify(),
    );
    this.producer = new Producer(
      this.backend,
      this.runner,
      {
        workerId: this.workerId,
        queues: s.queues,
        actors: [...this.actors.values()].map((a) => ({ name: a.name, maxConcurrent: a.maxConcurrent })),
        maxConcurrency: s.maxConcurrency,
        prefetch: s.prefetch ?? 'adaptive',
        maxSettleBacklog: MAX_SETTLE_BACKLOG,
        settleBacklog: () => this.completer.backlog,
        leaseMs: s.lockLeaseMs,
        oversample: s.dispatchOversample,
        pollIntervalMs: () => (this.listener?.connected ? s.notifyPollIntervalMs : s.pollIntervalMs),
        wakeUpsReliable: () => this.listener?.connected === true,
        otelEnabled: s.otelEnabled,
        metrics: this.workerMetrics,
      },
      this.logger,
    );
    this.heartbeat = new Heartbeat(
      this.backend,
      this.runner,
      {
        workerId: this.workerId,
        intervalMs: s.heartbeatIntervalMs,
        leaseMs: s.lockLeaseMs,
        maxFailures: s.maxHeartbeatFailures,
        onFatal: (reason) => {
          this.logger.error({ reason }, 'worker-self-terminating');
          void this.stop('fatal');
        },
        ...(this.limits ? { renewExtra: () => this.limits!.extendLeases() } : {}),
      },
      this.logger,
      this.cancels,
      this.tracker,
    );
    if (s.notifyEnabled) {
      this.listener = new NotifyListener(
        this.backend,
        {
          onWake: () => {
            this.notifyCounts.received++;
            this.producer.notify();
          },
          onCancel: (jobId) => {
            this.notifyCounts.received++;
            this.notifyCounts.cancelReceived++;
            this.cancels.observe(jobId, 1);
          },
        },
        {
          workerId: this.workerId,
          healthCheckIntervalMs: s.notifyHealthCheckIntervalMs,
          reconnectBackoffInitialMs: s.notifyReconnectBackoffInitialMs,
          setupTimeoutMs: s.notifyListenerSetupTimeoutMs,
        },
        this.logger,
      );
      try {
        await this.listener.start();
      } catch (err) {
        this.logger.warn({ err }, 'notify-unavailable-polling');
      }
    }
    this.maintenance = new MaintenanceLeader(
      this.backend,
      s,
      { workerId: this.workerId, hostname: hostname() },
      this.logger,
      (reason) => {
        this.logger.error({ reason }, 'worker-self-terminating');
        void this.stop('fatal');
      },
      { actors: this.actors, factories: this.factories },
    );
    if (this.limits) {
      this.limitSweeper = new RateLimitSweeper(this.limits, () => this.maintenance.isLeader, this.logger);
      this.limitSweeper.start();
    }
    if (s.reloadIntervalMs !== null) {
      this.reloadTimer = new ReloadTimer(this.reloader, { everyMs: s.reloadIntervalMs }, this.logger);
      this.reloadTimer.start();
    }
    await this.producer.warmUp();
    this.heartbeat.start();
    this.flusher.start();
    this.maintenance.start();
    this.producer.start();
    if (this.options.untilIdle) {
      this.drainMonitor = new DrainMonitor(
        this.backend,
        this.runner,
        s,
        this.logger,
        (reason) => void this.stop(reason),
      );
      this.drainMonitor.start();
    }
  }

  /** A start that failed half-way: stop what was started and release everything. */
  private async abortStart(): Promise<void> {
    await this.reloadTimer?.stop().catch(() => undefined);
    await this.producer?.stop().catch(() => undefined);
    await this.maintenance?.stop().catch(() => undefined);
    await this.limitSweeper?.stop().catch(() => undefined);
    await this.heartbeat?.stop().catch(() => undefined);
    await this.limits?.close().catch(() => undefined);
    await this.listener?.stop().catch(() => undefined);
    await this.ownedPublisher?.close().catch(() => undefined);
    await this.subJobs?.close().catch(() => undefined);
    await this.backend.deregisterWorker(this.workerId).catch(() => undefined);
    await this.dependencies?.close();
    await this.closeOwned();
    await this.metricsEndpoint?.close();
    await this.healthListeners?.stop();
    await this.hangDetector?.stop();
    this.currentPhase = 'stopped';
    this.resolveStopped('fatal');
  }

  /**
   * Graceful shutdown: stop claiming and re-pend claimed-but-unstarted jobs (draining); give running
   * handlers `cancellationGracePeriod` to finish; then abort their signals with `WorkerShutdown` and
   * wait `cleanupGracePeriod` (cancelling) — a handler that stops goes back to `pending` with its
   * attempt given back; then (forcing) thread-isolated handlers are terminated and re-pended, and
   * in-process handlers, which cannot be stopped, get the phase-2 escalation written and end
   * `abandoned` (abandoning), their promises orphaned. Safe to call more than once.
   */
  stop(reason: StopReason = 'requested'): Promise<void> {
    if (this.currentPhase === 'created' || this.currentPhase === 'stopped') return Promise.resolve();
    this.stopReason = this.stopping ? this.stopReason : reason;
    this.hangDetector?.shutdownStarted();
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  /** A second signal: skip the rest of the current grace and move to the next phase now. */
  escalate(): void {
    this.escalated = true;
    this.escalateNow?.();
  }

  private async graceWait(ms: number): Promise<void> {
    if (this.escalated) {
      this.escalated = false;
      return;
    }
    const sleep = interruptibleSleep(ms);
    this.escalateNow = () => {
      this.escalated = false;
      sleep.wake();
    };
    await Promise.race([sleep.promise, this.runner.whenIdle()]);
    sleep.wake();
    this.escalateNow = null;
  }

  private async shutdown(): Promise<void> {
    const s = this.settings;
    while (this.currentPhase === 'starting') await new Promise((r) => setTimeout(r, 10));
    const t0 = Date.now();
    this.currentPhase = 'draining';
    this.logger.info({ reason: this.stopReason, inFlight: this.runner.inFlight }, 'worker-draining');
    await this.drainMonitor?.stop();
    await this.reloadTimer?.stop();
    this.runner.stopStarting();
    await this.producer.stop();
    const unstarted = this.runner.unstartedJobIds();
    if (unstarted.length > 0) {
      try {
        const n = await this.backend.repend(this.workerId, unstarted);
        this.runner.forget(unstarted);
        this.logger.info({ repended: n }, 'worker-repended-unstarted');
      } catch (err) {
        this.logger.warn({ err }, 'repend-failed-reclaim-will-recover');
      }
    }
    await this.graceWait(s.cancellationGracePeriodMs);
    if (this.runner.inFlight > 0) {
      this.currentPhase = 'cancelling';
      this.logger.info({ inFlight: this.runner.inFlight }, 'worker-cancelling');
      this.runner.abortAll();
      await this.graceWait(s.cleanupGracePeriodMs);
    }
    if (this.runner.inFlight > 0) {
      // FORCING: threads are terminated (their jobs re-pended); in-process handlers that cannot be
      // stopped get the phase-2 escalation written first, then ABANDONING ends them `abandoned`.
      this.currentPhase = 'forcing';
      const { released, toAbandon } = await this.runner.forceAtShutdown();
      this.logger.warn({ released, giveUp: toAbandon.length }, 'worker-forcing');
      await this.cancels.escalateForShutdown(toAbandon);
      if (toAbandon.length > 0) {
        this.currentPhase = 'abandoning';
        await this.cancels.abandon(toAbandon, 'shutdown');
      }
    }
    await this.completer.drain();
    await this.subJobs?.close().catch(() => undefined);
    await this.runner.limitsReleased();
    await this.threads?.close();
    // After the handlers (and their job-scoped values): worker-scoped values last made go first.
    await this.dependencies?.close();
    await this.maintenance.stop();
    await this.limitSweeper?.stop();
    await this.flusher.stop();
    await this.ownedPublisher?.close().catch(() => undefined);
    this.cancels.stop();
    await this.heartbeat.stop();
    await this.limits?.close();
    await this.listener?.stop();
    try {
      await this.backend.deregisterWorker(this.workerId);
    } catch (err) {
      this.logger.warn({ err }, 'deregister-failed');
    }
    await this.closeOwned();
    this.workerMetrics?.shutdownFinished((Date.now() - t0) / 1000);
    await this.metricsEndpoint?.close();
    await this.healthListeners?.stop();
    await this.hangDetector?.stop();
    this.currentPhase = 'stopped';
    this.logger.info({ reason: this.stopReason, shutdownMs: Date.now() - t0 }, 'worker-stopped');
    this.resolveStopped(this.stopReason);
  }

  private async closeOwned(): Promise<void> {
    if (this.ownsBackend) await this.backend.close().catch(() => undefined);
    this.ownsBackend = false;
  }
}
