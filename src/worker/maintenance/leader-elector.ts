import type { Backend } from '../../backend/backend.js';
import type { LeaderSession } from '../../backend/worker-types.js';
import type { Logger } from '../../obs/logger.js';
import { LoopService } from '../loop-service.js';

/**
 * Competes for the maintenance leadership on every heartbeat tick: a session-level advisory lock on
 * a dedicated connection (Postgres releases it the moment the holder's connection dies, so a
 * killed leader is replaced within one heartbeat interval). The `maintenance_leader` row is
 * refreshed for operators; the lock is the authority.
 */
export class LeaderElector extends LoopService {
  private session: LeaderSession | null = null;
  private leading = false;
  private readonly listeners: ((leading: boolean) => void)[] = [];

  constructor(
    private readonly backend: Backend,
    private readonly identity: { workerId: string; hostname: string },
    private readonly periodMs: number,
    logger: Logger,
  ) {
    super('leader-elector', logger);
  }

  /** True while this worker is the maintenance leader. */
  get isLeader(): boolean {
    return this.leading;
  }

  /** Called with `true` on election and `false` on loss. */
  onChange(listener: (leading: boolean) => void): void {
    this.listeners.push(listener);
  }

  protected intervalMs(): number {
    return this.periodMs;
  }

  private set(leading: boolean): void {
    if (leading === this.leading) return;
    this.leading = leading;
    this.logger.info({ leader: leading }, leading ? 'leader-elected' : 'leader-lost');
    for (const l of this.listeners) l(leading);
  }

  /** One election attempt; returns whether this worker leads. */
  async runOnce(): Promise<boolean> {
    this.session ??= await this.backend.openLeaderSession(this.identity.workerId, this.identity.hostname);
    try {
      const held = await this.session.tryAcquire();
      this.set(held);
      return held;
    } catch (err) {
      this.set(false);
      throw err;
    }
  }

  override async stop(): Promise<void> {
    await super.stop();
    await this.session?.close().catch(() => undefined);
    this.session = null;
    this.set(false);
  }
}
