import type { FastifyInstance } from 'fastify';

import { SingletonCollisionError } from '../errors/backpressure-errors.js';
import type { AdminRouteContext } from './admin-route-context.js';
import { bulkPreview, expectedCount, filterQueryOf } from './bulk-action-form.js';
import { filterQueryString, jobFilterOf, narrowsJobs } from './jobs-page.js';
import { retryPreviewPage } from './retry-where-page.js';

/** Why an empty filter is refused: retrying "everything" is never one click away. */
const EMPTY_FILTER =
  'Choose at least one filter (status, queue, actor, tag, batch or identity key) first: the UI never retries every job at once.';

/**
 * Retry-by-filter from the jobs list (after an outage, the jobs it failed): `GET
 * /jobs/retry-preview?<filters>` shows how many jobs `retryWhere` would send back now (a dry run)
 * with a confirmation form; `POST /jobs/retry-where` (CSRF) retries them and redirects to the list
 * with the count. Both need actions; an empty filter, a status that cannot be retried and a
 * singleton collision retry nothing; the action is logged with who, the filter and the count.
 */
export function registerRetryWhereRoutes(app: FastifyInstance, rc: AdminRouteContext): void {
  const { base } = rc;

  const preview = bulkPreview(rc, {
    page: retryPreviewPage,
    dryRun: (filter) => rc.o.tq.retryWhere(filter, { dryRun: true }),
    emptyFilter: EMPTY_FILTER,
  });

  app.get('/jobs/retry-preview', async (request, reply) => {
    if (rc.mayAct(request, reply, 'retry jobs') === undefined) return reply;
    return preview(request, reply, filterQueryOf(request.query as Record<string, unknown>), 200, null);
  });

  app.post('/jobs/retry-where', { preHandler: app.csrfProtection }, async (request, reply) => {
    const user = rc.mayAct(request, reply, 'retry jobs');
    if (user === undefined) return reply;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const query = filterQueryOf(body);
    if (!narrowsJobs(query)) return preview(request, reply, query, 400, null);
    const expected = expectedCount(body);
    const filter = jobFilterOf(query);
    // More jobs match than the operator confirmed: show the new count and ask again, retry nothing.
    const now = await rc.o.tq.retryWhere(filter, { dryRun: true });
    if (now.retried > expected)
      return preview(
        request,
        reply,
        query,
        409,
        `${now.retried} jobs match now, more than the ${expected} you confirmed: nothing was retried. Check the count and confirm again.`,
      );
    let retried: number;
    try {
      retried = (await rc.o.tq.retryWhere(filter)).retried;
    } catch (err) {
      if (err instanceof SingletonCollisionError)
        return preview(request, reply, query, 409, `${err.message}: nothing was retried.`);
      throw err;
    }
    rc.logAction(user, 'retry-where', { filter: query, previewed: expected, retried });
    const params = new URLSearchParams(filterQueryString(query));
    params.set('retried', String(retried));
    return reply.redirect(`${base}/jobs?${params.toString()}`, 303);
  });
}
