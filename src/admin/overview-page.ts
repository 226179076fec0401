import type { FleetObservation } from '../backend/fleet-observation.js';
import type { LeaderLease } from '../backend/worker-types.js';
import { html, time } from './html.js';
import { layout, type PageContext } from './layout.js';

/**
 * The overview: every queue with its live jobs by status and the workers serving it, a banner for
 * each queue whose pending jobs no alive worker serves, and the maintenance leader.
 */
export function overviewPage(
  ctx: PageContext,
  fleet: FleetObservation,
  leader: LeaderLease | null,
  livenessSeconds: number,
): string {
  const stranded = fleet.queues.filter((q) => q.pending > 0 && q.workersAlive === 0);
  const link = (queue: string, status: string, n: number) =>
    n === 0
      ? html`<span class="muted">0</span>`
      : html`<a href="${ctx.base}/jobs?queue=${encodeURIComponent(queue)}&status=${status}">${n}</a>`;
  const body = html` <h1>Overview</h1>
    ${stranded.map(
      (q) =>
        html`<div class="banner" role="alert">
          Queue <strong>${q.queue}</strong> has ${q.pending} pending job(s) but no alive worker serves it
          (none seen in the last ${livenessSeconds} s).
        </div>`,
    )}
    <h2>Queues</h2>
    ${
      fleet.queues.length === 0
        ? html`<p class="muted">No queue has jobs or workers yet.</p>`
        : html`<table>
            <thead>
              <tr>
                <th>Queue</th>
                <th>Pending</th>
                <th>Scheduled</th>
                <th>Running</th>
                <th>Oldest pending</th>
                <th>Workers alive</th>
              </tr>
            </thead>
            <tbody>
              ${fleet.queues.map(
                (q) =>
                  html`<tr>
                    <td><a href="${ctx.base}/jobs?queue=${encodeURIComponent(q.queue)}">${q.queue}</a></td>
                    <td>${link(q.queue, 'pending', q.pending)}</td>
                    <td>${link(q.queue, 'scheduled', q.scheduled)}</td>
                    <td>${link(q.queue, 'running', q.running)}</td>
                    <td>
                      ${q.oldestPendingAgeSeconds === null ? '—' : `${Math.round(q.oldestPendingAgeSeconds)} s`}
                    </td>
                    <td>${q.workersAlive}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    <h2>Maintenance leader</h2>
    ${
      leader === null
        ? html`<p class="muted">No worker has led yet.</p>`
        : html`<dl class="row">
            <dt>Worker</dt>
            <dd>${leader.workerId}${leader.hostname ? ` (${leader.hostname})` : ''}</dd>
            <dt>Lease</dt>
            <dd>
              ${leader.valid ? 'valid' : html`<strong class="status-failed">expired</strong>`}, term
              ${leader.term}
            </dd>
            <dt>Renewed</dt>
            <dd>${time(leader.renewedAt)}</dd>
            <dt>Expires</dt>
            <dd>${time(leader.expiresAt)}</dd>
          </dl>`
    }`;
  return layout(ctx, 'Overview', body);
}
