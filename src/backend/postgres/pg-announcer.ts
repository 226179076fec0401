import type { Logger } from '../../obs/logger.js';
import { workerChannel } from '../../core/schema-name.js';
import { encodeAnnouncedIds, encodeCancelAnnouncement, type CancelAnnouncement } from '../announcements.js';
import type { PgOps } from './pg-ops.js';

/** What one announcement sends: any mix of done jobs, progressed jobs, a wake-up and cancel requests. */
export interface Announcement {
  /** Jobs that reached a terminal status (the done channel). */
  done?: readonly string[];
  /** Jobs whose progress was written (the progress channel). */
  progress?: readonly string[];
  /** Dispatchable work appeared (the wake channel). */
  wake?: boolean;
  /** Cancel requests for running jobs: on the events channel and on each worker's own channel. */
  cancels?: readonly CancelAnnouncement[];
}

/**
 * Sends the Postgres backend's announcements with the `announce` statement, after the write they
 * announce has committed: a listener woken by one reads that write. Best effort and not awaited by
 * the caller's write: waiters poll as the source of truth, and a lost wake-up is covered by the
 * workers' poll.
 */
export class PgAnnouncer {
  constructor(
    private readonly ops: PgOps,
    private readonly logger: Logger,
  ) {}

  /** Sends what `a` holds (nothing when it is empty). Never throws: a failure is logged. */
  send(a: Announcement): Promise<void> {
    const channels: string[] = [];
    const payloads: string[] = [];
    const add = (channel: string, payload: string): void => {
      channels.push(channel);
      payloads.push(payload);
    };
    const { wake, done, progress, events } = this.ops.channels;
    if (a.done && a.done.length > 0) add(done, encodeAnnouncedIds(a.done));
    if (a.progress && a.progress.length > 0) add(progress, encodeAnnouncedIds(a.progress));
    if (a.wake) add(wake, '');
    for (const c of a.cancels ?? []) {
      const payload = encodeCancelAnnouncement(c);
      add(events, payload);
      add(workerChannel(this.ops.schema, c.workerId), payload);
    }
    if (channels.length === 0) return Promise.resolve();
    return this.ops.run('announce', [channels, payloads]).then(
      () => undefined,
      (err: unknown) => this.logger.warn({ err, channels }, 'announce-failed'),
    );
  }
}
