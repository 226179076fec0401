import type { QueueMode } from '../backend/types.js';
import type { QueueView } from '../cli/queue-view.js';
import { html, type SafeHtml } from './html.js';
import { csrfField, layout, type PageContext } from './layout.js';

/** The dispatch modes, as the mode form offers them. */
const MODES: readonly (readonly [QueueMode, string])[] = [
  ['strict_fifo', 'strict_fifo (priority, then time)'],
  ['round_robin', 'round_robin (interleave fairness keys)'],
];

/** What the queues page shows. */
export interface QueuesPageData {
  /** Every queue, as `taskq queues list` shows it. */
  queues: QueueView[];
  /** Show the mode and cap forms (actions enabled and the user may act). */
  actionsEnabled: boolean;
  /** A one-line outcome of the action that led here (`?done=` after a redirect). */
  notice: string | null;
  /** The liveness window, seconds (for the banner's wording). */
  livenessSeconds: number;
}

function countLink(ctx: PageContext, queue: string, status: string, n: number): SafeHtml {
  if (n === 0) return html`<span class="muted">0</span>`;
  return html`<a href="${ctx.base}/jobs?queue=${encodeURIComponent(queue)}&status=${status}">${n}</a>`;
}

function forms(ctx: PageContext, q: QueueView): SafeHtml {
  const action = `${ctx.base}/queues/${encodeURIComponent(q.name)}`;
  return html`<form class="inline" method="post" action="${action}/mode">
      ${csrfField(ctx)}
      <select name="mode" aria-label="Mode of ${q.name}">
        ${MODES.map(
          ([mode, label]) =>
            html`<option value="${mode}" ${q.mode === mode ? html` selected` : ''}>${label}</option>`,
        )}
      </select>
      <button type="submit">Set mode</button>
    </form>
    <form class="inline" method="post" action="${action}/max-concurrent">
      ${csrfField(ctx)}
      <input
        name="maxConcurrent"
        inputmode="numeric"
        size="6"
        value="${q.maxConcurrent === null ? '' : String(q.maxConcurrent)}"
        placeholder="no cap"
        aria-label="Max concurrent of ${q.name}"
      />
      <button type="submit">Set cap</button>
    </form>`;
}

/**
 * The queues page: each queue's dispatch mode, fleet-wide cap, live jobs by status and alive
 * workers — the rows of `taskq queues list` — and, with actions enabled, forms to change the mode
 * and the cap.
 */
export function queuesPage(ctx: PageContext, d: QueuesPageData): string {
  const stranded = d.queues.filter((q) => q.pending > 0 && q.workersAlive === 0);
  const body = html` <h1>Queues</h1>
    ${d.notice === null ? '' : html`<div class="banner" role="status">${d.notice}</div>`}
    ${stranded.map(
      (q) =>
        html`<div class="banner" role="alert">
          Queue <strong>${q.name}</strong> has ${q.pending} pending job(s) but no alive worker serves it (none
          seen in the last ${d.livenessSeconds} s).
        </div>`,
    )}
    ${
      d.queues.length === 0
        ? html`<p class="muted">
            No queue: no job, no configured queue and no alive worker (every queue is strict_fifo without a
            cap).
          </p>`
        : html`<table id="queues">
            <thead>
              <tr>
                <th>Queue</th>
                <th>Mode</th>
                <th>Max concurrent</th>
                <th>Pending</th>
                <th>Scheduled</th>
                <th>Running</th>
                <th>Oldest pending</th>
                <th>Workers alive</th>
                ${d.actionsEnabled ? html`<th>Change</th>` : ''}
              </tr>
            </thead>
            <tbody>
              ${d.queues.map(
                (q) =>
                  html`<tr data-queue="${q.name}">
                    <td><a href="${ctx.base}/jobs?queue=${encodeURIComponent(q.name)}">${q.name}</a></td>
                    <td class="mode">
                      ${q.mode}${q.configured ? '' : html` <span class="muted">(default)</span>`}
                    </td>
                    <td class="cap">
                      ${q.maxConcurrent === null ? html`<span class="muted">none</span>` : q.maxConcurrent}
                    </td>
                    <td>${countLink(ctx, q.name, 'pending', q.pending)}</td>
                    <td>${countLink(ctx, q.name, 'scheduled', q.scheduled)}</td>
                    <td>${countLink(ctx, q.name, 'running', q.running)}</td>
                    <td>
                      ${q.oldestPendingAgeSeconds === null ? '—' : `${Math.round(q.oldestPendingAgeSeconds)} s`}
                    </td>
                    <td>
                      ${
                        q.workersAlive === 0 && q.pending > 0
                          ? html`<strong class="status-failed">0</strong>`
                          : q.workersAlive
                      }
                    </td>
                    ${d.actionsEnabled ? html`<td>${forms(ctx, q)}</td>` : ''}
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    <p class="muted">
      The mode applies from the next claim. The cap bounds the queue's running jobs across the whole fleet;
      workers read it when they start. A blank cap removes it.
    </p>`;
  return layout(ctx, 'Queues', body);
}
