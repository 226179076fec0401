import { workerChannel } from '../../core/schema-name.js';
import { decodeAnnouncedIds, decodeCancelAnnouncement } from '../announcements.js';
import type { NotificationHandlers, NotificationSubscription } from '../worker-types.js';
import type { PgOps } from './pg-ops.js';

/** LISTENs on the requested channels over a dedicated connection. */
export async function subscribe(
  ops: PgOps,
  handlers: NotificationHandlers,
  rawWorkerId: string | undefined,
): Promise<NotificationSubscription> {
  const workerId = rawWorkerId?.toLowerCase();
  const conn = await ops.driver.dedicated({
    applicationName: workerId ? `taskq-listen:${workerId.slice(-12)}` : 'taskq-listen',
  });
  const onCancelPayload = (payload: string, filter: boolean): void => {
    const msg = decodeCancelAnnouncement(payload);
    if (!msg) {
      ops.logger.warn({ payload }, 'notify-unparseable-payload');
      return;
    }
    if (filter && msg.workerId.toLowerCase() !== workerId) return;
    handlers.onCancel?.(msg.jobId, msg.workerId);
  };
  try {
    if (handlers.onWake) await conn.listen(ops.channels.wake, () => handlers.onWake?.());
    if (handlers.onDone) {
      await conn.listen(ops.channels.done, (payload) => handlers.onDone?.(decodeAnnouncedIds(payload)));
    }
    if (handlers.onProgress) {
      await conn.listen(ops.channels.progress, (payload) =>
        handlers.onProgress?.(decodeAnnouncedIds(payload)),
      );
    }
    if (handlers.onCancel && workerId) {
      await conn.listen(ops.channels.events, (p) => onCancelPayload(p, true));
      await conn.listen(workerChannel(ops.schema, workerId), (p) => onCancelPayload(p, false));
    }
  } catch (err) {
    await conn.close();
    throw ops.translate(err);
  }
  return {
    ping: async () => {
      await conn.query('SELECT 1');
    },
    onClose: (cb) => conn.onClose(cb),
    close: () => conn.close(),
  };
}
