import type { BatchCounts, BatchPage, BatchRow } from '../backend/batch-types.js';
import { bounded, html, time, type SafeHtml } from './html.js';
import { layout, type PageContext } from './layout.js';

/** The batches list's query string: `listBatches`' filters, one value each. */
export interface BatchesQuery {
  /** Queue of the batch (its first child's). */
  queue?: string;
  /** `active`, `finished` (complete or aborted), or absent for all. */
  state?: string;
  /** The previous page's `nextCursor`. */
  cursor?: string;
}

/** The query string of `query` with `cursor` replaced (the next page keeps every filter). */
function withCursor(query: BatchesQuery, cursor: string): string {
  const params = new URLSearchParams();
  if (query.queue) params.set('queue', query.queue);
  if (query.state) params.set('state', query.state);
  params.set('cursor', cursor);
  return params.toString();
}

const TERMINAL: readonly (keyof BatchCounts)[] = ['succeeded', 'failed', 'cancelled', 'crashed', 'abandoned'];

/** `3 succeeded · 1 failed`: the non-zero terminal counters. */
function countsLine(c: BatchCounts): string {
  const parts = TERMINAL.filter((k) => c[k] > 0).map((k) => `${c[k]} ${k}`);
  return parts.length === 0 ? 'none finished' : parts.join(' · ');
}

/** The batches list: filters, one page of batch rows, a link to the next page (keyset cursor). */
export function batchesPage(
  ctx: PageContext,
  query: BatchesQuery,
  page: BatchPage | null,
  problem: string | null,
): string {
  const states = [
    ['', 'any'],
    ['active', 'active'],
    ['finished', 'complete or aborted'],
  ] as const;
  const body = html`<h1>Batches</h1>
    <p class="muted">
      Batches enqueued with a failure policy or a finalizer have a row; others are found by their children
      (<code>/jobs?batch=…</code>).
    </p>
    <form class="filters" method="get" action="${ctx.base}/batches">
      <label>Queue<input name="queue" value="${query.queue ?? ''}" /></label>
      <label
        >State<select name="state">
          ${states.map(
            ([value, label]) =>
              html`<option value="${value}" ${(query.state ?? '') === value ? html` selected` : ''}>
                ${label}
              </option>`,
          )}
        </select></label
      >
      <button type="submit">Filter</button>
    </form>
    <form class="filters" method="get" action="${ctx.base}/batches/lookup">
      <label>Batch id<input name="id" size="38" placeholder="0190…" /></label>
      <button type="submit">Open</button>
    </form>
    ${problem === null ? '' : html`<div class="banner" role="alert">${problem}</div>`}
    ${
      page === null
        ? ''
        : page.batches.length === 0
          ? html`<p class="muted">No batch matches.</p>`
          : html`<table>
                <thead>
                  <tr>
                    <th>Batch</th>
                    <th>Queue</th>
                    <th>Status</th>
                    <th>Children</th>
                    <th>Not finished</th>
                    <th>Finished children</th>
                    <th>Created</th>
                    <th>Completed</th>
                  </tr>
                </thead>
                <tbody>
                  ${page.batches.map(
                    (b) =>
                      html`<tr>
                        <td>
                          <a href="${ctx.base}/batches/${b.id}"><code>${b.id}</code></a>
                        </td>
                        <td>${b.queue}</td>
                        <td><span class="status status-${b.status}">${b.status}</span></td>
                        <td>${b.counts.total}</td>
                        <td>${b.counts.pending}</td>
                        <td>${countsLine(b.counts)}</td>
                        <td>${time(b.createdAt)}</td>
                        <td>${time(b.completedAt)}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>
              ${
                page.nextCursor === null
                  ? ''
                  : html`<a rel="next" href="${ctx.base}/batches?${withCursor(query, page.nextCursor)}"
                      >Next page →</a
                    >`
              }`
    }`;
  return layout(ctx, 'Batches', body);
}

/** What the batch page shows besides the row. */
export interface BatchPageOptions {
  /** The user may read payloads (the metadata may hold user data). */
  readPayloads: boolean;
  /** Bound on the shown metadata, in characters of JSON. */
  maxShownChars: number;
}

function counter(label: string, value: number, cls = ''): SafeHtml {
  return html`<tr>
    <td>${label}</td>
    <td class="${cls}" data-counter="${label}">${value}</td>
  </tr>`;
}

/** One batch: status, counters per status, policy, finalizer, its children's link and metadata. */
export function batchPage(ctx: PageContext, b: BatchRow, o: BatchPageOptions): string {
  const c = b.counts;
  const metadata = JSON.stringify(b.metadata ?? {}, null, 2);
  const body = html`<h1>Batch <code>${b.id}</code></h1>
    <dl class="row">
      <dt>Status</dt>
      <dd><span class="status status-${b.status}">${b.status}</span></dd>
      <dt>Queue</dt>
      <dd>${b.queue}</dd>
      <dt>Expected size</dt>
      <dd>${b.expectedSize} ${b.expectedSize === 1 ? 'child' : 'children'}${b.sealed ? '' : ' so far'}</dd>
      <dt>Sealed</dt>
      <dd>
        ${b.sealed ? 'yes' : 'no: a streaming enqueue may still add children (an open batch never completes)'}
      </dd>
      <dt>Failure policy</dt>
      <dd>
        ${
          b.failureThreshold === null
            ? 'never aborts'
            : `aborts after ${b.failureThreshold} consecutive failure${b.failureThreshold === 1 ? '' : 's'}`
        }
        (streak now ${b.consecutiveFailures})
      </dd>
      <dt>Finalizer</dt>
      <dd>
        ${
          b.finalizerJobId === null
            ? html`<span class="muted">none</span>`
            : html`<a href="${ctx.base}/jobs/${b.finalizerJobId}"><code>${b.finalizerJobId}</code></a>`
        }
      </dd>
      <dt>Created</dt>
      <dd>${time(b.createdAt)}</dd>
      <dt>Completed</dt>
      <dd>${time(b.completedAt)}</dd>
      <dt>Children</dt>
      <dd><a href="${ctx.base}/jobs?batch=${b.id}">list the children</a></dd>
    </dl>
    <h2>Children by status</h2>
    <table>
      <tbody>
        ${counter('total', c.total)} ${counter('not finished', c.pending)}
        ${counter('succeeded', c.succeeded, 'status-succeeded')}
        ${counter('failed', c.failed, 'status-failed')} ${counter('cancelled', c.cancelled)}
        ${counter('crashed', c.crashed, 'status-crashed')}
        ${counter('abandoned', c.abandoned, 'status-abandoned')}
      </tbody>
    </table>
    <h2>Metadata</h2>
    ${
      o.readPayloads
        ? html`<pre>${bounded(metadata, o.maxShownChars)}</pre>`
        : html`<p class="muted">Hidden: you may not read payloads, and metadata may hold user data.</p>`
    }`;
  return layout(ctx, `Batch ${b.id}`, body);
}
