import type { JobPage } from '../backend/backend.js';
import type { JobFilter } from '../backend/job-filter.js';
import { JOB_STATUSES, type JobStatus } from '../backend/types.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { html, time } from './html.js';
import { layout, type PageContext } from './layout.js';

/** The jobs list's query string: the read API's filters, one value each. */
export interface JobsQuery {
  /** One status. */
  status?: string;
  /** Queue name. */
  queue?: string;
  /** Actor name. */
  actor?: string;
  /** One tag the jobs carry. */
  tag?: string;
  /** A batch id: the jobs enqueued in that batch (`metadata.batch_id`). */
  batch?: string;
  /** An identity key: the jobs holding it. */
  identity?: string;
  /** `active` (pending, scheduled or running) or `finished` (any terminal status). */
  state?: string;
  /** A `JobSortField` value. */
  order?: string;
  /** The previous page's `nextCursor`. */
  cursor?: string;
}

/** The filter fields of the list that select jobs (not order or cursor): what cancel-by-filter takes. */
export const FILTER_KEYS = ['status', 'queue', 'actor', 'tag', 'batch', 'identity', 'state'] as const;

/** The values of the list's `state` field and the API's `active` flag they stand for. */
const STATES: Readonly<Record<string, boolean>> = { active: true, finished: false };

/**
 * The API filter of the list's selecting fields (`status`, `queue`, `actor`, `tag`, `batch`,
 * `identity`, `state`); the API validates the values when it reads. Order, cursor and limit are
 * the caller's.
 * @throws InvalidArgumentError for a `state` other than `active` or `finished`
 */
export function jobFilterOf(query: JobsQuery): JobFilter {
  const filter: JobFilter = {};
  if (query.status) filter.status = query.status as JobStatus;
  if (query.queue) filter.queue = query.queue;
  if (query.actor) filter.actor = query.actor;
  if (query.tag) filter.tags = [query.tag];
  if (query.batch) filter.batchId = query.batch;
  if (query.identity) filter.identityKey = query.identity;
  if (query.state) {
    const active = STATES[query.state];
    if (active === undefined)
      throw new InvalidArgumentError(
        'state',
        query.state,
        'must be "active" or "finished" (or empty for any)',
      );
    filter.active = active;
  }
  return filter;
}

/**
 * Whether `query` narrows the jobs by something other than `state` alone: cancel-by-filter needs it
 * (`state=active` alone would be every cancellable job, which the UI never cancels at once).
 */
export function narrowsJobs(query: JobsQuery): boolean {
  return FILTER_KEYS.some((k) => k !== 'state' && Boolean(query[k]));
}

/** The query string of the selecting fields of `query` (empty when none is set). */
export function filterQueryString(query: JobsQuery): string {
  const params = new URLSearchParams();
  for (const key of FILTER_KEYS) {
    const value = query[key];
    if (value) params.set(key, value);
  }
  return params.toString();
}

/** What the jobs list shows besides its rows. */
export interface JobsPageExtras {
  /** Offer "Cancel matching…" and "Retry matching…" (actions enabled and the user may act). */
  canAct?: boolean;
  /** A one-line outcome of the action that led here (a fixed text with counts). */
  notice?: string | null;
}

const ORDERS = [
  ['scheduled_at_asc', 'dispatch order'],
  ['created_at_desc', 'newest first'],
  ['finished_at_desc', 'recently finished'],
] as const;

/** The query string of `query` with `cursor` replaced (the next page keeps every filter). */
function withCursor(query: JobsQuery, cursor: string): string {
  const params = new URLSearchParams();
  for (const key of [...FILTER_KEYS, 'order'] as const) {
    const value = query[key];
    if (value) params.set(key, value);
  }
  params.set('cursor', cursor);
  return params.toString();
}

/** The jobs list: filters, lookup by id or idempotency key, one page of jobs and a link to the next (keyset cursor). */
export function jobsPage(
  ctx: PageContext,
  query: JobsQuery,
  page: JobPage | null,
  problem: string | null,
  extras: JobsPageExtras = {},
): string {
  const selecting = filterQueryString(query);
  const body = html` <h1>Jobs</h1>
    <form class="filters" method="get" action="${ctx.base}/jobs">
      <label
        >Status<select name="status">
          <option value="">any</option>
          ${JOB_STATUSES.map(
            (s) => html`<option value="${s}" ${query.status === s ? html` selected` : ''}>${s}</option>`,
          )}
        </select></label
      >
      <label>Queue<input name="queue" value="${query.queue ?? ''}" /></label>
      <label>Actor<input name="actor" value="${query.actor ?? ''}" /></label>
      <label>Tag<input name="tag" value="${query.tag ?? ''}" /></label>
      <label>Batch<input name="batch" size="38" value="${query.batch ?? ''}" /></label>
      <label>Identity key<input name="identity" value="${query.identity ?? ''}" /></label>
      <label
        >State<select name="state">
          <option value="">any</option>
          ${(['active', 'finished'] as const).map(
            (v) => html`<option value="${v}" ${query.state === v ? html` selected` : ''}>${v}</option>`,
          )}
        </select></label
      >
      <label
        >Order<select name="order">
          ${ORDERS.map(
            ([value, label]) =>
              html`<option value="${value}" ${query.order === value ? html` selected` : ''}>
                ${label}
              </option>`,
          )}
        </select></label
      >
      <button type="submit">Filter</button>
      ${
        !extras.canAct
          ? ''
          : !narrowsJobs(query)
            ? html`<span class="muted"
                >Filter (status, queue, actor, tag, batch or identity key) to cancel or retry matching
                jobs.</span
              >`
            : html`<a class="button" id="cancel-matching" href="${ctx.base}/jobs/cancel-preview?${selecting}"
                  >Cancel matching…</a
                >
                <a class="button" id="retry-matching" href="${ctx.base}/jobs/retry-preview?${selecting}"
                  >Retry matching…</a
                >`
      }
    </form>
    <form class="filters" method="get" action="${ctx.base}/lookup">
      <label>Job id<input name="id" size="38" placeholder="0190…" /></label>
      <label>or idempotency key<input name="key" /></label>
      <label>in scope<input name="scope" placeholder="(default)" /></label>
      <button type="submit">Open</button>
    </form>
    ${extras.notice ? html`<div class="banner" role="status">${extras.notice}</div>` : ''}
    ${problem === null ? '' : html`<div class="banner" role="alert">${problem}</div>`}
    ${
      page === null
        ? ''
        : page.jobs.length === 0
          ? html`<p class="muted">No job matches.</p>`
          : html`<table>
                <thead>
                  <tr>
                    <th>Job</th>
                    <th>Actor</th>
                    <th>Queue</th>
                    <th>Status</th>
                    <th>Attempt</th>
                    <th>Created</th>
                    <th>Scheduled</th>
                    <th>Finished</th>
                  </tr>
                </thead>
                <tbody>
                  ${page.jobs.map(
                    (j) =>
                      html`<tr>
                        <td>
                          <a href="${ctx.base}/jobs/${j.id}"><code>${j.id}</code></a>
                        </td>
                        <td>${j.actor}</td>
                        <td>${j.queue}</td>
                        <td><span class="status status-${j.status}">${j.status}</span></td>
                        <td>${j.attempt}/${j.maxAttempts}</td>
                        <td>${time(j.createdAt)}</td>
                        <td>${time(j.scheduledAt)}</td>
                        <td>${time(j.finishedAt)}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>
              ${page.nextCursor === null ? '' : html`<a rel="next" href="${ctx.base}/jobs?${withCursor(query, page.nextCursor)}">Next page →</a>`}`
    }`;
  return layout(ctx, 'Jobs', body);
}
