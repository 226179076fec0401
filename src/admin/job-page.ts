import { ACTIVE_STATUSES, RETRYABLE_TERMINAL_STATUSES } from '../backend/state-machine.js';
import type { AttemptRow, EventRow, JobRow } from '../backend/types.js';
import type { JobExplanation } from '../client/job-explanation.js';
import { bounded, html, time, type SafeHtml } from './html.js';
import { csrfField, layout, type PageContext } from './layout.js';

/** What the job page shows besides the row. */
export interface JobPageData {
  /** The job's row. */
  job: JobRow;
  /** Its finished attempts, oldest first. */
  attempts: AttemptRow[];
  /** Its event log. */
  events: EventRow[];
  /** May the user read the payload and the result? */
  readPayloads: boolean;
  /** Show the retry and cancel buttons (actions enabled and the user may act). */
  actionsEnabled: boolean;
  /** Bound on shown payloads and results, characters. */
  maxShownChars: number;
  /** Bound on shown error messages and tracebacks, characters. */
  maxTracebackChars: number;
  /** The polling fallback's interval, ms (read by admin.js). */
  pollIntervalMs: number;
  /** A one-line outcome of the action that led here (`?done=` after a redirect). */
  notice: string | null;
  /** What holds the job back (`tq.explain`), for a pending or scheduled job; null otherwise. */
  explanation: JobExplanation | null;
  /** Set when the row comes from the archive (`jobs_archive`): when it was archived and when it goes. */
  archived?: { archivedAt: Date; expireAt: Date };
}

/** "Why isn't this job running?": the reasons `tq.explain` gives, most decisive first. */
function explanationPanel(e: JobExplanation | null): SafeHtml | string {
  if (e === null) return '';
  return html`<h2>Why isn't this job running?</h2>
    ${
      e.reasons.length === 0
        ? html`<p id="job-explain">
            Nothing holds it back: a worker serving its queue should claim it soon.
          </p>`
        : html`<ul id="job-explain">
            ${e.reasons.map((r) => html`<li><code>${r.kind}</code> ${r.message}</li>`)}
          </ul>`
    }
    <p class="muted">Read ${time(e.checkedAt)} (database clock).</p>`;
}

/** JSON of a stored value, cut to `maxChars`. */
function shownJson(value: unknown, maxChars: number): string {
  const text = JSON.stringify(value, null, 2) ?? 'null';
  return bounded(text, maxChars);
}

function hidden(what: string): SafeHtml {
  return html`<p class="muted">
    The ${what} is hidden: your account may not read job payloads and results.
  </p>`;
}

/** The job detail page: row, payload and result (bounded, with read access), error, attempts, events, actions. */
export function jobPage(ctx: PageContext, d: JobPageData): string {
  const j = d.job;
  const actions = !d.actionsEnabled
    ? ''
    : html`<p>
        ${
          RETRYABLE_TERMINAL_STATUSES.has(j.status)
            ? html`<form class="inline" method="post" action="${ctx.base}/jobs/${j.id}/retry">
                ${csrfField(ctx)}<button type="submit">Retry</button>
              </form>`
            : ''
        }
        ${
          ACTIVE_STATUSES.has(j.status)
            ? html`<form class="inline" method="post" action="${ctx.base}/jobs/${j.id}/cancel">
                ${csrfField(ctx)}<button type="submit">Cancel</button>
              </form>`
            : ''
        }
      </p>`;
  const body = html` <h1>Job <code>${j.id}</code></h1>
    ${
      d.archived === undefined
        ? ''
        : html`<div class="banner" role="status" id="archived-banner">
            <strong>Archived.</strong> This job passed its retention and was moved to the archive
            ${time(d.archived.archivedAt)}; the archive deletes it ${time(d.archived.expireAt)}. What follows
            is the archived row and its attempts; its events were not archived, and it can no longer be
            retried or cancelled.
          </div>`
    }
    ${d.notice === null ? '' : html`<div class="banner" role="status">${d.notice}</div>`}
    <div
      id="live"
      data-status="${j.status}"
      data-poll-ms="${d.pollIntervalMs}"
      data-state-url="${ctx.base}/jobs/${j.id}/state"
      data-stream-url="${ctx.base}/jobs/${j.id}/stream"
    ></div>
    ${actions} ${explanationPanel(d.explanation)}
    <dl class="row">
      <dt>Status</dt>
      <dd>
        <span id="job-status" class="status status-${j.status}">${j.status}</span
        >${j.cancelRequestedAt ? html` <span class="muted">(cancel requested ${time(j.cancelRequestedAt)})</span>` : ''}
      </dd>
      <dt>Actor</dt>
      <dd><a href="${ctx.base}/jobs?actor=${encodeURIComponent(j.actor)}">${j.actor}</a></dd>
      <dt>Queue</dt>
      <dd><a href="${ctx.base}/jobs?queue=${encodeURIComponent(j.queue)}">${j.queue}</a></dd>
      <dt>Attempt</dt>
      <dd>${j.attempt} of ${j.maxAttempts} (${j.retryKind})</dd>
      <dt>Priority</dt>
      <dd>${j.priority}</dd>
      <dt>Identity key</dt>
      <dd>${j.identityKey ?? '—'}</dd>
      <dt>Idempotency key</dt>
      <dd>${j.idempotencyKey ?? '—'}</dd>
      <dt>Tags</dt>
      <dd>
        ${j.tags.length === 0 ? '—' : j.tags.map((t) => html`<a href="${ctx.base}/jobs?tag=${encodeURIComponent(t)}">${t}</a> `)}
      </dd>
      <dt>Created</dt>
      <dd>${time(j.createdAt)}</dd>
      <dt>Scheduled</dt>
      <dd>${time(j.scheduledAt)}</dd>
      <dt>Started</dt>
      <dd>${time(j.startedAt)}</dd>
      <dt>Finished</dt>
      <dd>${time(j.finishedAt)}</dd>
      <dt>Worker</dt>
      <dd>${j.lockedByWorker ?? '—'}</dd>
      <dt>Progress</dt>
      <dd><code id="job-progress">${JSON.stringify(j.progressState)}</code></dd>
    </dl>
    ${
      j.errorClass || j.errorMessage
        ? html`<h2>Error</h2>
            <p>
              <strong>${j.errorClass ?? 'Error'}</strong>:
              ${bounded(j.errorMessage ?? '', d.maxTracebackChars)}
            </p>
            ${j.errorTraceback ? html`<pre>${bounded(j.errorTraceback, d.maxTracebackChars)}</pre>` : ''}`
        : ''
    }
    <h2>Payload</h2>
    ${d.readPayloads ? html`<pre>${shownJson(j.payload, d.maxShownChars)}</pre>` : hidden('payload')}
    <h2>Result</h2>
    ${
      !d.readPayloads
        ? hidden('result')
        : j.result === null || j.result === undefined
          ? html`<p class="muted">No stored result.</p>`
          : html`<pre>${shownJson(j.result, d.maxShownChars)}</pre>`
    }
    <h2>Attempts</h2>
    ${
      d.attempts.length === 0
        ? html`<p class="muted">No attempt finished yet.</p>`
        : html`<table>
            <thead>
              <tr>
                <th>#</th>
                <th>Outcome</th>
                <th>Worker</th>
                <th>Started</th>
                <th>Finished</th>
                <th>Duration</th>
                <th>Error</th>
              </tr>
            </thead>
            <tbody>
              ${d.attempts.map(
                (a) =>
                  html`<tr>
                    <td>${a.attempt}</td>
                    <td>${a.outcome}</td>
                    <td>${a.workerId ?? '—'}</td>
                    <td>${time(a.startedAt)}</td>
                    <td>${time(a.finishedAt)}</td>
                    <td>${a.durationMs === null ? '—' : `${Math.round(a.durationMs)} ms`}</td>
                    <td>
                      ${a.errorClass ? `${a.errorClass}: ` : ''}${bounded(a.errorMessage ?? '', d.maxTracebackChars)}
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    <h2>Events</h2>
    ${
      d.events.length === 0
        ? html`<p class="muted">${d.archived === undefined ? 'No events.' : 'Events are not archived.'}</p>`
        : html`<table>
            <thead>
              <tr>
                <th>When</th>
                <th>Kind</th>
                <th>Detail</th>
              </tr>
            </thead>
            <tbody>
              ${d.events.map(
                (e) =>
                  html`<tr>
                    <td>${time(e.occurredAt)}</td>
                    <td>${e.kind}</td>
                    <td><code>${bounded(JSON.stringify(e.detail), d.maxTracebackChars)}</code></td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }`;
  return layout(ctx, `Job ${j.id}`, body);
}
