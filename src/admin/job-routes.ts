import type { FastifyInstance } from 'fastify';

import type { JobSortField } from '../backend/cursor.js';
import type { JobFilter } from '../backend/job-filter.js';
import { isUuid } from '../core/ids.js';
import { checkStorableText } from '../core/text-checks.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { JobNotFoundError } from '../errors/job-errors.js';
import { one, sendPage, type AdminRouteContext } from './admin-route-context.js';
import { jobPage } from './job-page.js';
import { jobState, jobStateStream, StreamSlots } from './job-state-stream.js';
import { registerCancelWhereRoutes } from './cancel-where-routes.js';
import { registerRetryWhereRoutes } from './retry-where-routes.js';
import { jobFilterOf, jobsPage, type JobsQuery } from './jobs-page.js';

/** Rows per page of the jobs list. */
const JOBS_PAGE_SIZE = 50;

/**
 * The jobs list, lookup by id or idempotency key, the job page with its live state (SSE with a
 * cap, and a polling endpoint), and the retry / cancel actions.
 */
export function registerJobRoutes(app: FastifyInstance, rc: AdminRouteContext): void {
  const { base } = rc;
  // Their static paths (/jobs/cancel-preview, /jobs/retry-where, ...) win over /jobs/:id.
  registerCancelWhereRoutes(app, rc);
  registerRetryWhereRoutes(app, rc);
  app.get('/jobs', async (request, reply) => {
    const q = request.query as Record<string, unknown>;
    const query: JobsQuery = {
      status: one(q.status),
      queue: one(q.queue),
      actor: one(q.actor),
      tag: one(q.tag),
      batch: one(q.batch),
      identity: one(q.identity),
      state: one(q.state),
      order: one(q.order),
      cursor: one(q.cursor),
    };
    const c = await rc.page(request, reply);
    const user = rc.userOf(request);
    const extras = {
      canAct: rc.o.actionsEnabled && (user === null || user.actions),
      notice: cancelNotice(q) ?? retryNotice(q),
    };
    try {
      const filter: JobFilter = { ...jobFilterOf(query), limit: JOBS_PAGE_SIZE };
      if (query.order) filter.orderBy = query.order as JobSortField;
      if (query.cursor) filter.cursor = query.cursor;
      // list() validates every field (status, batch, order, cursor) before it reads anything.
      const page = await rc.o.tq.list(filter);
      return sendPage(reply, 200, jobsPage(c, query, page, null, extras));
    } catch (err) {
      if (err instanceof InvalidArgumentError)
        return sendPage(reply, 400, jobsPage(c, query, null, err.message, extras));
      throw err;
    }
  });

  app.get('/lookup', async (request, reply) => {
    const q = request.query as Record<string, unknown>;
    const id = one(q.id);
    const key = one(q.key);
    const refuse = async (status: number, problem: string) =>
      sendPage(reply, status, jobsPage(await rc.page(request, reply), {}, null, problem));
    if (id !== undefined) {
      if (!isUuid(id))
        return refuse(
          400,
          `${JSON.stringify(id)} is not a job id: paste a job's UUID (8-4-4-4-12 hexadecimal digits)`,
        );
      return reply.redirect(`${base}/jobs/${id.toLowerCase()}`, 303);
    }
    if (key === undefined) return refuse(400, 'Give a job id or an idempotency key to look up.');
    // Keys are stored as given: the raw values (not trimmed) are looked up.
    const rawKey = typeof q.key === 'string' ? q.key : key;
    const scope = typeof q.scope === 'string' ? q.scope : '';
    checkStorableText(rawKey, 'key');
    checkStorableText(scope, 'scope');
    const job = await rc.o.tq.backend.getByIdempotencyKey(rawKey, scope);
    if (job === null)
      return refuse(
        404,
        `No job holds the idempotency key ${JSON.stringify(rawKey)} in ${scope === '' ? 'the default scope' : `scope ${JSON.stringify(scope)}`} (a pruned job is no longer found).`,
      );
    return reply.redirect(`${base}/jobs/${job.id}`, 303);
  });

  app.get<{ Params: { id: string }; Querystring: { done?: string } }>('/jobs/:id', async (request, reply) => {
    const id = jobIdParam(request.params.id);
    const job = await rc.o.tq.getRow(id);
    if (job === null) {
      // Past its retention, sweep 5 moved it to the archive: show that row, read-only.
      const archived = await rc.o.tq.backend.getArchivedJob(id);
      if (archived === null) throw new JobNotFoundError(id);
      const user = rc.userOf(request);
      return sendPage(
        reply,
        200,
        jobPage(await rc.page(request, reply), {
          job: archived.job,
          attempts: archived.attempts,
          events: [],
          readPayloads: user === null || user.readPayloads,
          actionsEnabled: false,
          maxShownChars: rc.o.maxShownChars,
          maxTracebackChars: rc.o.maxTracebackChars,
          pollIntervalMs: rc.o.pollIntervalMs,
          notice: null,
          explanation: null,
          archived: { archivedAt: archived.archivedAt, expireAt: archived.expireAt },
        }),
      );
    }
    const waiting = job.status === 'pending' || job.status === 'scheduled';
    const [attempts, events, explanation] = await Promise.all([
      rc.o.tq.backend.getAttempts(id),
      rc.o.tq.backend.getEvents(id),
      waiting ? rc.o.tq.explain(id, { workerAliveWithin: rc.o.workerLivenessMs }) : Promise.resolve(null),
    ]);
    const user = rc.userOf(request);
    const notice = NOTICES[one(request.query.done) ?? ''] ?? null;
    return sendPage(
      reply,
      200,
      jobPage(await rc.page(request, reply), {
        job,
        attempts,
        events,
        readPayloads: user === null || user.readPayloads,
        actionsEnabled: rc.o.actionsEnabled && (user === null || user.actions),
        maxShownChars: rc.o.maxShownChars,
        maxTracebackChars: rc.o.maxTracebackChars,
        pollIntervalMs: rc.o.pollIntervalMs,
        notice,
        explanation,
      }),
    );
  });

  app.get<{ Params: { id: string } }>('/jobs/:id/state', async (request, reply) => {
    const id = jobIdParam(request.params.id);
    const job = await rc.o.tq.getRow(id);
    if (job === null) return reply.code(404).send({ error: `job ${id} does not exist` });
    return reply.header('cache-control', 'no-store').send(jobState(job));
  });

  const slots = new StreamSlots(rc.o.maxSseConnections);
  app.get<{ Params: { id: string } }>('/jobs/:id/stream', async (request, reply) => {
    const id = jobIdParam(request.params.id);
    if (!slots.tryAcquire()) {
      // The page's script falls back to polling /state when the stream is refused.
      return reply
        .code(503)
        .header('retry-after', String(Math.ceil(rc.o.pollIntervalMs / 1000)))
        .send({
          error: `too many live streams (maxSseConnections ${rc.o.maxSseConnections}); poll /state instead`,
        });
    }
    const abort = new AbortController();
    // The response closes when the client goes away; Fastify then destroys the stream too.
    reply.raw.once('close', () => abort.abort());
    const stream = jobStateStream(rc.o.tq, id, rc.o.pollIntervalMs, abort.signal, () => slots.release());
    stream.once('close', () => abort.abort());
    return reply
      .header('content-type', 'text/event-stream; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('x-accel-buffering', 'no')
      .send(stream);
  });

  app.post<{ Params: { id: string } }>(
    '/jobs/:id/retry',
    { preHandler: app.csrfProtection },
    async (request, reply) => {
      const id = jobIdParam(request.params.id);
      const user = rc.mayAct(request, reply, 'retry or cancel jobs');
      if (user === undefined) return reply;
      const retried = await rc.o.tq.retryJob(id);
      rc.logAction(user, 'retry', { jobId: id, changed: retried });
      return reply.redirect(`${base}/jobs/${id}?done=${retried ? 'retried' : 'not-retried'}`, 303);
    },
  );

  app.post<{ Params: { id: string } }>(
    '/jobs/:id/cancel',
    { preHandler: app.csrfProtection },
    async (request, reply) => {
      const id = jobIdParam(request.params.id);
      const user = rc.mayAct(request, reply, 'retry or cancel jobs');
      if (user === undefined) return reply;
      const result = await rc.o.tq.cancel(id, `cancelled from the admin UI by ${user}`);
      rc.logAction(user, 'cancel', {
        jobId: id,
        changed: result.cancellationInitiated,
        status: result.newStatus,
      });
      return reply.redirect(
        `${base}/jobs/${id}?done=${result.cancellationInitiated ? 'cancelled' : 'not-cancelled'}`,
        303,
      );
    },
  );
}

/**
 * The outcome of a cancel-by-filter, from the redirect's `cancelled` and `requested` counts (only
 * whole numbers are shown; anything else shows nothing).
 */
function cancelNotice(q: Record<string, unknown>): string | null {
  const cancelled = one(q.cancelled);
  const requested = one(q.requested);
  if (cancelled === undefined || !/^\d{1,9}$/.test(cancelled)) return null;
  const asked = requested !== undefined && /^\d{1,9}$/.test(requested) ? Number(requested) : 0;
  return (
    `Cancelled ${Number(cancelled)} matching job${cancelled === '1' ? '' : 's'} at once` +
    `; cancel requested for ${asked} running job${asked === 1 ? '' : 's'}.`
  );
}

/** The outcome of a retry-by-filter, from the redirect's `retried` count (a whole number, else nothing). */
function retryNotice(q: Record<string, unknown>): string | null {
  const retried = one(q.retried);
  if (retried === undefined || !/^\d{1,9}$/.test(retried)) return null;
  return `Retried ${Number(retried)} matching job${retried === '1' ? '' : 's'}: pending again with a fresh attempt budget.`;
}

/** Outcomes of actions, shown once on the job page after the redirect (fixed texts, not echoed input). */
const NOTICES: Readonly<Record<string, string>> = {
  retried: 'Retried: the job is pending again with a fresh attempt budget.',
  'not-retried': 'Not retried: only a failed, crashed, cancelled or abandoned job can be retried.',
  cancelled: 'Cancel requested.',
  'not-cancelled': 'Nothing to cancel: the job had already finished or a cancel was already requested.',
};

function jobIdParam(id: string): string {
  if (!isUuid(id)) throw new InvalidArgumentError('jobId', id, 'must be a job id (a UUID)');
  return id.toLowerCase();
}
