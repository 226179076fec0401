import type { DedicatedConnection } from '../../db/driver.js';
import { workerChannel } from '../../core/schema-name.js';
import { decodeAnnouncedIds, decodeCancelAnnouncement } from '../announcements.js';
import type { LeaderSession, NotificationHandlers, NotificationSubscription } from '../worker-types.js';
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

/**
 * A leadership session: a session-level advisory lock held on a dedicated connection (released by
 * Postgres the moment that connection dies), plus the `maintenance_leader` row for operators.
 */
export async function openLeaderSession(
  ops: PgOps,
  workerId: string,
  hostname: string,
): Promise<LeaderSession> {
  const key = `taskq:maintenance_leader:${ops.schema}`;
  let conn: DedicatedConnection | null = null;
  let held = false;
  const drop = (): void => {
    held = false;
    conn = null;
  };
  const session: LeaderSession = {
    get held() {
      return held;
    },
    tryAcquire: async () => {
      try {
        if (!conn) {
          const c = await ops.driver.dedicated({ applicationName: `taskq-leader:${workerId.slice(-12)}` });
          c.onClose(() => {
            if (conn === c) drop();
          });
          conn = c;
        }
        const c = conn;
        if (!held) {
          const res = await c.query<{ acquired: boolean }>(ops.sql.tryLeaderLock, [key]);
          held = res.rows[0]?.acquired === true;
        }
        if (held) await c.query(ops.sql.upsertLeaderRow, [workerId, hostname]);
        return held;
      } catch (err) {
        // The session (and with it the lock) is gone or unusable: start over on the next tick.
        const c = conn;
        drop();
        await c?.close().catch(() => undefined);
        throw ops.translate(err);
      }
    },
    close: async () => {
      const c = conn;
      if (c && held) await c.query(ops.sql.releaseLeaderLock, [key]).catch(() => undefined);
      drop();
      await c?.close().catch(() => undefined);
    },
  };
  return session;
}
