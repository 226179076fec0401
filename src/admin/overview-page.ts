import type { ActivityObservation, WorkerObservation } from '../backend/activity-observation.js';
import type { FleetObservation } from '../backend/fleet-observation.js';
import type { LeaderLease } from '../backend/worker-types.js';
import { html, time, type SafeHtml } from './html.js';
import { layout, type PageContext } from './layout.js';

/** What the overview shows. */
export interface OverviewData {
  /** Queues with live jobs by status and alive workers. */
  fleet: FleetObservation;
  /** Workers and the jobs finished within the recent window. */
  activity: ActivityObservation;
  /** The maintenance leader's lease, or null when no worker has led. */
  leader: LeaderLease | null;
  /** The liveness window, seconds. */
  livenessSeconds: number;
  /** The recent window of `activity.finished`, seconds. */
  recentSeconds: number;
  /** The most finished jobs counted (when `activity.finishedCapped`, counts are "at least"). */
  maxCounted: number;
}

/**
 * The leader's watchdog verdict: healthy while its lease is valid and its worker has been seen
 * within the liveness window (the reference's `watchdog_healthy`); otherwise why not.
 */
export function leaderVerdict(
  leader: LeaderLease | null,
  workers: readonly WorkerObservation[],
  livenessSeconds: number,
): { healthy: boolean; why: string } {
  if (leader === null) return { healthy: false, why: 'no worker has led yet: no sweep runs' };
  if (!leader.valid) return { healthy: false, why: 'the lease expired: no worker leads, sweeps wait' };
  const worker = workers.find((w) => w.workerId === leader.workerId);
  if (!worker || !worker.alive)
    return {
      healthy: false,
      why: `its worker has not been seen in the last ${livenessSeconds} s: its lease runs out unless renewed`,
    };
  return { healthy: true, why: `its worker was seen ${Math.round(worker.lastSeenAgeSeconds)} s ago` };
}

function throughputTable(base: string, d: OverviewData): SafeHtml {
  const { finished, finishedCapped } = d.activity;
  const atLeast = finishedCapped ? '≥ ' : '';
  const window = d.recentSeconds >= 60 ? `${Math.round(d.recentSeconds / 60)} min` : `${d.recentSeconds} s`;
  if (finished.length === 0) return html`<p class="muted">No job finished in the last ${window}.</p>`;
  return html`<table>
      <thead>
        <tr>
          <th>Queue</th>
          <th>Succeeded</th>
          <th>Failed</th>
          <th>Cancelled, crashed, abandoned</th>
          <th>Per second</th>
        </tr>
      </thead>
      <tbody>
        ${finished.map(
          (f) =>
            html`<tr>
              <td>
                <a href="${base}/jobs?queue=${encodeURIComponent(f.queue)}&state=finished">${f.queue}</a>
              </td>
              <td>${atLeast}${f.succeeded}</td>
              <td>
                ${f.failed === 0 ? html`<span class="muted">0</span>` : html`<strong class="status-failed">${atLeast}${f.failed}</strong>`}
              </td>
              <td>${atLeast}${f.other}</td>
              <td>${atLeast}${((f.succeeded + f.failed + f.other) / d.recentSeconds).toFixed(1)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
    ${
      finishedCapped
        ? html`<p class="muted">
            More than ${d.maxCounted} jobs finished in the last ${window}: the counts are those of the newest
            ${d.maxCounted} (a bound that keeps this page fast on a busy fleet).
          </p>`
        : ''
    }`;
}

function workersTable(workers: readonly WorkerObservation[], livenessSeconds: number): SafeHtml {
  if (workers.length === 0) return html`<p class="muted">No worker is registered.</p>`;
  return html`<table>
    <thead>
      <tr>
        <th>Worker</th>
        <th>Host, pid</th>
        <th>Queues</th>
        <th>Concurrency</th>
        <th>Version</th>
        <th>Started</th>
        <th>Last seen</th>
      </tr>
    </thead>
    <tbody>
      ${workers.map(
        (w) =>
          html`<tr>
            <td>
              <code>${w.workerId}</code>${w.label ? html`<br /><span class="muted">${w.label}</span>` : ''}
            </td>
            <td>${w.hostname}, ${w.pid}</td>
            <td>${w.queues.join(', ')}</td>
            <td>${w.maxConcurrency}</td>
            <td>${w.version ?? '—'}</td>
            <td>${time(w.startedAt)}</td>
            <td>
              ${Math.round(w.lastSeenAgeSeconds)} s ago
              ${w.alive ? '' : html`<strong class="status-failed">(not alive: over ${livenessSeconds} s)</strong>`}
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/**
 * The overview: every queue with its live jobs by status and the workers serving it, a banner for
 * each queue whose pending jobs no alive worker serves, recent outcomes per queue, the maintenance
 * leader with its watchdog verdict, and every registered worker.
 */
export function overviewPage(ctx: PageContext, d: OverviewData): string {
  const { fleet, leader, livenessSeconds } = d;
  const stranded = fleet.queues.filter((q) => q.pending > 0 && q.workersAlive === 0);
  const verdict = leaderVerdict(leader, d.activity.workers, livenessSeconds);
  const link = (queue: string, status: string, n: number) =>
    n === 0
      ? html`<span class="muted">0</span>`
      : html`<a href="${ctx.base}/jobs?queue=${encodeURIComponent(queue)}&status=${status}">${n}</a>`;
  const alive = d.activity.workers.filter((w) => w.alive).length;
  const body = html` <h1>Overview</h1>
    ${stranded.map(
      (q) =>
        html`<div class="banner" role="alert">
          Queue <strong>${q.queue}</strong> has ${q.pending} pending job(s) but no alive worker serves it
          (none seen in the last ${livenessSeconds} s).
        </div>`,
    )}
    ${
      verdict.healthy
        ? ''
        : html`<div class="banner" role="alert">Maintenance leader unhealthy: ${verdict.why}.</div>`
    }
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
    <h2>Finished recently</h2>
    ${throughputTable(ctx.base, d)}
    <h2>Maintenance leader</h2>
    ${
      leader === null
        ? html`<p class="muted">No worker has led yet.</p>`
        : html`<dl class="row">
            <dt>Worker</dt>
            <dd>${leader.workerId}${leader.hostname ? ` (${leader.hostname})` : ''}</dd>
            <dt>Watchdog</dt>
            <dd id="leader-watchdog">
              ${verdict.healthy ? html`<span class="status-succeeded">healthy</span>` : html`<strong class="status-failed">unhealthy</strong>`}:
              ${verdict.why}
            </dd>
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
    }
    <h2>Workers (${alive} alive of ${d.activity.workers.length})</h2>
    ${workersTable(d.activity.workers, livenessSeconds)}`;
  return layout(ctx, 'Overview', body);
}
