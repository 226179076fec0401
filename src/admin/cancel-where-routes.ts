import type { FastifyInstance } from 'fastify';

import type { AdminRouteContext } from './admin-route-context.js';
import { bulkPreview, expectedCount, filterQueryOf } from './bulk-action-form.js';
import { cancelPreviewPage } from './cancel-where-page.js';
import { filterQueryString, jobFilterOf, narrowsJobs } from './jobs-page.js';

/** Why an empty filter is refused: cancelling "everything" is never one click away. */
const EMPTY_FILTER =
  'Choose at least one filter (status, queue, actor, tag, batch or identity key) first: the UI never cancels every job at once.';

/**
 * Cancel-by-filter from the jobs list: `GET /jobs/cancel-preview?<filters>` shows how many jobs
 * `cancelWhere` would change now (a dry run) with a confirmation form; `POST /jobs/cancel-where`
 * (CSRF) cancels them and redirects to the list with the counts. Both need actions; an empty
 * filter is refused and cancels nothing; the action is logged with who, the filter and the counts.
 */
export function registerCancelWhereRoutes(app: FastifyInstance, rc: AdminRouteContext): void {
  const { base } = rc;

  const preview = bulkPreview(rc, {
    page: cancelPreviewPage,
    dryRun: (filter) => rc.o.tq.cancelWhere(filter, null, { dryRun: true }),
    emptyFilter: EMPTY_FILTER,
  });

  app.get('/jobs/cancel-preview', async (request, reply) => {
    if (rc.mayAct(request, reply, 'cancel jobs') === undefined) return reply;
    return preview(request, reply, filterQueryOf(request.query as Record<string, unknown>), 200, null);
  });

  app.post('/jobs/cancel-where', { preHandler: app.csrfProtection }, async (request, reply) => {
    const user = rc.mayAct(request, reply, 'cancel jobs');
    if (user === undefined) return reply;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const query = filterQueryOf(body);
    if (!narrowsJobs(query)) return preview(request, reply, query, 400, null);
    const expected = expectedCount(body);
    const filter = jobFilterOf(query);
    // More jobs match than the operator confirmed: show the new count and ask again, cancel nothing.
    const now = await rc.o.tq.cancelWhere(filter, null, { dryRun: true });
    if (now.totalAffected > expected)
      return preview(
        request,
        reply,
        query,
        409,
        `${now.totalAffected} jobs match now, more than the ${expected} you confirmed: nothing was cancelled. Check the count and confirm again.`,
      );
    const r = await rc.o.tq.cancelWhere(filter, `cancelled from the admin UI by ${user} (cancel matching)`);
    rc.logAction(user, 'cancel-where', {
      filter: query,
      previewed: expected,
      cancelled: r.cancelledDirectly,
      cancelRequested: r.cancelRequested,
      totalAffected: r.totalAffected,
    });
    const params = new URLSearchParams(filterQueryString(query));
    params.set('cancelled', String(r.cancelledDirectly));
    params.set('requested', String(r.cancelRequested));
    return reply.redirect(`${base}/jobs?${params.toString()}`, 303);
  });
}
