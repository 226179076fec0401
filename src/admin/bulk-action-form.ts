import type { FastifyReply, FastifyRequest } from 'fastify';

import type { JobFilter } from '../backend/job-filter.js';
import { EmptyFilterError } from '../errors/client-errors.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { one, sendPage, type AdminRouteContext } from './admin-route-context.js';
import { FILTER_KEYS, jobFilterOf, narrowsJobs, type JobsQuery } from './jobs-page.js';
import type { PageContext } from './layout.js';

/** The selecting filter fields of a query string or a bulk action's form body. */
export function filterQueryOf(values: Record<string, unknown>): JobsQuery {
  const query: JobsQuery = {};
  for (const key of FILTER_KEYS) {
    const value = one(values[key]);
    if (value !== undefined) query[key] = value;
  }
  return query;
}

/**
 * The count the operator confirmed on a bulk action's preview (the form's `expected` field): the
 * action goes ahead only while no more jobs match than that.
 * @throws InvalidArgumentError when it is not a whole number
 */
export function expectedCount(body: Record<string, unknown>): number {
  const text = one(body.expected);
  if (text === undefined || !/^\d{1,9}$/.test(text))
    throw new InvalidArgumentError(
      'expected',
      body.expected ?? null,
      'must be the previewed count (a whole number)',
    );
  return Number(text);
}

/** What differs between the preview routes of the bulk actions. */
export interface BulkPreviewSpec<P> {
  /** The preview page: `preview` null when the filter was refused (`problem` says why). */
  page: (ctx: PageContext, query: JobsQuery, preview: P | null, problem: string | null) => string;
  /** The action's dry run for the filter. */
  dryRun: (filter: JobFilter) => Promise<P>;
  /** Why a filter with no field is refused. */
  emptyFilter: string;
}

/** Answers a preview page with that HTTP status and problem. */
export type BulkPreview = (
  request: FastifyRequest,
  reply: FastifyReply,
  query: JobsQuery,
  status: number,
  problem: string | null,
) => Promise<FastifyReply>;

/**
 * The preview responder of a bulk action: the page with the dry run's count (at `status`), or a
 * 400 page without a form for a filter with no field or a value the API refuses.
 */
export function bulkPreview<P>(rc: AdminRouteContext, spec: BulkPreviewSpec<P>): BulkPreview {
  return async (request, reply, query, status, problem) => {
    const c = await rc.page(request, reply);
    if (!narrowsJobs(query)) return sendPage(reply, 400, spec.page(c, query, null, spec.emptyFilter));
    try {
      const counts = await spec.dryRun(jobFilterOf(query));
      return sendPage(reply, status, spec.page(c, query, counts, problem));
    } catch (err) {
      if (err instanceof InvalidArgumentError)
        return sendPage(reply, 400, spec.page(c, query, null, err.message));
      if (err instanceof EmptyFilterError)
        return sendPage(reply, 400, spec.page(c, query, null, spec.emptyFilter));
      throw err;
    }
  };
}
