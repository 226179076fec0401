import type { Backend } from '../backend/backend.js';
import { isTerminal } from '../backend/state-machine.js';
import type { JobRow } from '../backend/types.js';
import { JobNotFoundError, WaitTimeoutError } from '../errors/job-errors.js';
import type { JobNotificationFanout } from '../progress/job-notification-fanout.js';

/**
 * Resolves with the job's row once it is terminal. Wakes on the backend's job-done announcement and
 * polls as the source of truth: quickly at first, then every second while announcements are live
 * (every 250 ms while they are not).
 * @throws JobNotFoundError when the job does not exist, WaitTimeoutError after `timeoutMs`.
 */
export async function waitForTerminal(
  backend: Backend,
  notifications: JobNotificationFanout,
  jobId: string,
  timeoutMs: number | null,
): Promise<JobRow> {
  const deadline = timeoutMs === null ? Infinity : performance.now() + timeoutMs;
  let wake: () => void = () => undefined;
  // An announcement that lands while the row is being read (that read may predate the commit) must
  // still cut the next sleep short: remember it.
  let notifiedMeanwhile = false;
  const onAnnounced = (): void => {
    notifiedMeanwhile = true;
    wake();
  };
  const release = notifications.add(jobId, {
    onDone: onAnnounced,
    onProgress: () => undefined,
    onLost: wake,
  });
  try {
    const live = await notifications.ensure();
    let pollMs = 20;
    for (;;) {
      notifiedMeanwhile = false;
      const row = await backend.get(jobId);
      if (!row) throw new JobNotFoundError(jobId);
      if (isTerminal(row.status)) return row;
      const left = deadline - performance.now();
      if (left <= 0)
        throw new WaitTimeoutError(`job ${jobId} to finish (it is ${row.status})`, timeoutMs ?? 0);
      if (notifiedMeanwhile) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(pollMs, left));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = () => undefined;
      pollMs = Math.min(pollMs * 2, live && notifications.isLive ? 1000 : 250);
    }
  } finally {
    await release();
  }
}
