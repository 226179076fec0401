import { BoundedCheck, type CheckResult } from './bounded-check.js';
import { POSTGRES_CHECK, type ReadinessChecks } from './readiness-checks.js';

/** The body of `/ready`. */
export interface ReadinessReport {
  /** `ready` (HTTP 200) or `not-ready` (HTTP 503). */
  status: 'ready' | 'not-ready';
  /** The worker's phase (`starting`, `running`, `draining`, …): only `running` can be ready. */
  phase: string;
  /** Each check's result by name, the Postgres ping as `postgres`; empty when the phase alone decides. */
  checks: Record<string, CheckResult>;
}

/** Options of {@link ReadinessProbe}. */
export interface ReadinessProbeOptions {
  /** The worker's current phase. */
  phase: () => string;
  /** One round trip to the storage (`Backend.ping`). */
  ping: () => Promise<void>;
  /** Bound on the ping (`healthPgPingTimeout`), ms. */
  pingTimeoutMs: number;
  /** The registered checks. */
  checks: ReadinessChecks;
  /** Bound on each registered check (`healthReadinessCheckTimeout`), ms. */
  checkTimeoutMs: number;
}

/**
 * Decides readiness: the worker is `running`, the Postgres ping answers within its timeout, and every
 * registered check passes within its own. Checks run side by side, so a probe waits at most for the
 * longest timeout. Outside `running` (starting, or any shutdown phase) the answer is not-ready at
 * once, without touching Postgres: a draining worker must leave the load balancer's rotation.
 */
export class ReadinessProbe {
  private readonly postgres: BoundedCheck;

  constructor(private readonly options: ReadinessProbeOptions) {
    this.postgres = new BoundedCheck(POSTGRES_CHECK, () => options.ping());
  }

  /** Runs every check and reports. */
  async evaluate(): Promise<ReadinessReport> {
    const o = this.options;
    const phase = o.phase();
    if (phase !== 'running') return { status: 'not-ready', phase, checks: {} };
    const runs: Promise<[string, CheckResult]>[] = [
      this.postgres.run(o.pingTimeoutMs).then((r) => [POSTGRES_CHECK, r]),
      ...o.checks.list().map((c) => c.run(o.checkTimeoutMs).then((r): [string, CheckResult] => [c.name, r])),
    ];
    const checks = Object.fromEntries(await Promise.all(runs));
    // The phase may have moved on while the checks ran: a shutdown that began meanwhile wins.
    const now = o.phase();
    const ok = now === 'running' && Object.values(checks).every((r) => r.ok);
    return { status: ok ? 'ready' : 'not-ready', phase: now, checks };
  }
}
