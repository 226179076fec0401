/**
 * What the backends announce to subscribers, and how it travels. Both backends use these rules: the
 * Postgres backend encodes them as NOTIFY payloads, the in-memory one passes the decoded values.
 * Announcements only wake listeners; readers re-read the rows for the truth.
 */

/**
 * Most job ids one done or progress announcement lists; past it the announcement is `'*'` ("re-check
 * every job you wait for"). Postgres caps a NOTIFY payload at 8000 bytes: 150 ids of 37 characters
 * stay well under.
 */
export const IDS_PER_ANNOUNCEMENT = 150;

/** The jobs an announcement names, or `'*'` for "any job may have changed". */
export type AnnouncedIds = readonly string[] | '*';

/** A cancel request for a running job, addressed to the worker holding it. */
export interface CancelAnnouncement {
  jobId: string;
  workerId: string;
}

/** The ids as announced: the ids themselves, or `'*'` when there are too many to list. */
export function announcedIds(ids: readonly string[]): AnnouncedIds {
  return ids.length > IDS_PER_ANNOUNCEMENT ? '*' : ids;
}

/** The NOTIFY payload of a done or progress announcement. */
export function encodeAnnouncedIds(ids: readonly string[]): string {
  const a = announcedIds(ids);
  return a === '*' ? '*' : a.join(',');
}

/** The ids of a done or progress NOTIFY payload (an empty payload counts as `'*'`). */
export function decodeAnnouncedIds(payload: string): AnnouncedIds {
  return payload === '*' || payload === '' ? '*' : payload.split(',');
}

/** The NOTIFY payload of a cancel request. */
export function encodeCancelAnnouncement(c: CancelAnnouncement): string {
  return JSON.stringify({ type: 'cancel', worker_id: c.workerId, job_id: c.jobId });
}

/** The cancel request of a NOTIFY payload, or null when the payload is not one. */
export function decodeCancelAnnouncement(payload: string): CancelAnnouncement | null {
  let msg: { type?: unknown; job_id?: unknown; worker_id?: unknown };
  try {
    msg = JSON.parse(payload) as typeof msg;
  } catch {
    return null;
  }
  if (msg === null || typeof msg !== 'object' || msg.type !== 'cancel') return null;
  if (typeof msg.job_id !== 'string' || typeof msg.worker_id !== 'string') return null;
  return { jobId: msg.job_id, workerId: msg.worker_id };
}
