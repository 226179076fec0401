import { formatMs } from '../core/duration.js';
import type { ActorView, ActorsModel, CapacityField, CapacityView } from './actor-view.js';
import { bounded, html, time, type SafeHtml } from './html.js';
import { csrfField, layout, type PageContext } from './layout.js';

/** What the actors page shows besides the model. */
export interface ActorsPageData {
  /** The rows, counts and drift. */
  model: ActorsModel;
  /** Show the capacity form (actions enabled and the user may act). */
  actionsEnabled: boolean;
  /** A one-line outcome of the action that led here (`?done=` after a redirect). */
  notice: string | null;
  /** Bound on the metadata shown per actor, characters of JSON. */
  maxMetadataChars: number;
}

const LABELS: Readonly<Record<CapacityField, string>> = {
  maxConcurrent: 'Max concurrent',
  maxPending: 'Max pending',
  resultTtlMs: 'Result TTL',
};

function shown(field: CapacityField, value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  return field === 'resultTtlMs' ? formatMs(value) : String(value);
}

/** The code's literal in a comparison: "none" reads better than a dash there. */
function declaredText(c: CapacityView): string {
  return c.declared === null ? 'none' : shown(c.field, c.declared);
}

/** A capacity cell: the value in force, where it comes from, and the other value when they differ. */
function capacityCell(c: CapacityView): SafeHtml {
  const inForce = c.source === 'operator' ? c.stored : c.source === 'code' ? c.declared : null;
  const source =
    c.source === 'operator'
      ? 'operator'
      : c.source === 'code'
        ? "code's literal"
        : c.source === 'none'
          ? 'not set'
          : 'not stored; code not known';
  return html`<td class="capacity" data-field="${c.field}" data-source="${c.source}">
    ${shown(c.field, inForce)} <span class="muted">(${source})</span>
    ${c.overridden ? html`<br /><span class="drift">code declares ${declaredText(c)}</span>` : ''}
  </td>`;
}

/** The drift cell: structural differences (a worker refuses to start on them) and capacity overrides. */
function driftCell(a: ActorView): SafeHtml {
  if (a.drift === null) return html`<td class="muted">code not known</td>`;
  if (a.undeclared) return html`<td class="drift">not declared in the code given to the UI</td>`;
  const overrides = a.capacity.filter((c) => c.overridden);
  if (a.drift.length === 0 && overrides.length === 0) return html`<td>none</td>`;
  return html`<td class="drift">
    ${a.drift.map(
      (d) =>
        html`<div>
          <strong>${d.field}:</strong> code ${JSON.stringify(d.registered)}, stored
          ${JSON.stringify(d.stored)} <span class="muted">(a worker refuses to start)</span>
        </div>`,
    )}
    ${overrides.map(
      (c) =>
        html`<div>
          <strong>${LABELS[c.field]}:</strong> operator ${shown(c.field, c.stored)}, code ${declaredText(c)}
          <span class="muted">(operator's value applies)</span>
        </div>`,
    )}
  </td>`;
}

function countLink(ctx: PageContext, actor: string, status: string, n: number): SafeHtml {
  if (n === 0) return html`<span class="muted">0</span>`;
  return html`<a href="${ctx.base}/jobs?actor=${encodeURIComponent(actor)}&status=${status}">${n}</a>`;
}

function capacityForm(ctx: PageContext, a: ActorView): SafeHtml {
  const current = a.row.maxConcurrent;
  return html`<form
    class="inline"
    method="post"
    action="${ctx.base}/actors/${encodeURIComponent(a.row.actor)}/capacity"
  >
    ${csrfField(ctx)}
    <label
      >Max concurrent
      <input
        name="maxConcurrent"
        inputmode="numeric"
        size="6"
        value="${current === null ? '' : String(current)}"
        placeholder="code's"
        aria-label="Max concurrent of ${a.row.actor}"
    /></label>
    <button type="submit">Set</button>
  </form>`;
}

/**
 * The actors page: every stored actor configuration with its live jobs, whether an alive worker
 * serves its queue, its operator-owned capacity against the code's literals, and drift.
 */
export function actorsPage(ctx: PageContext, d: ActorsPageData): string {
  const { model } = d;
  const stranded = model.actors.filter((a) => a.pending > 0 && a.workersAlive === 0);
  const body = html` <h1>Actors</h1>
    ${d.notice === null ? '' : html`<div class="banner" role="status">${d.notice}</div>`}
    ${stranded.map(
      (a) =>
        html`<div class="banner" role="alert">
          Actor <strong>${a.row.actor}</strong> has ${a.pending} pending job(s) but no alive worker serves its
          queue ${a.row.queue}.
        </div>`,
    )}
    ${
      model.codeKnown
        ? ''
        : html`<p class="muted">
            Drift is not shown: the UI was not given the code's actor declarations (the
            <code>actors</code> option), and the database does not hold them.
          </p>`
    }
    ${
      model.actors.length === 0
        ? html`<p class="muted">No actor registered (a worker registers its actors when it starts).</p>`
        : html`<table id="actors">
            <thead>
              <tr>
                <th>Actor</th>
                <th>Queue</th>
                <th>Pending</th>
                <th>Scheduled</th>
                <th>Running</th>
                <th>Workers alive</th>
                ${Object.values(LABELS).map((l) => html`<th>${l}</th>`)}
                <th>Metadata</th>
                <th>Drift</th>
                <th>Updated</th>
                ${d.actionsEnabled ? html`<th>Change</th>` : ''}
              </tr>
            </thead>
            <tbody>
              ${model.actors.map(
                (a) =>
                  html`<tr data-actor="${a.row.actor}">
                    <td>
                      <a href="${ctx.base}/jobs?actor=${encodeURIComponent(a.row.actor)}">${a.row.actor}</a>
                    </td>
                    <td>
                      <a href="${ctx.base}/jobs?queue=${encodeURIComponent(a.row.queue)}">${a.row.queue}</a>
                    </td>
                    <td>${countLink(ctx, a.row.actor, 'pending', a.pending)}</td>
                    <td>${countLink(ctx, a.row.actor, 'scheduled', a.scheduled)}</td>
                    <td>${countLink(ctx, a.row.actor, 'running', a.running)}</td>
                    <td>
                      ${a.workersAlive === 0 ? html`<strong class="status-failed">0</strong>` : a.workersAlive}
                    </td>
                    ${a.capacity.map(capacityCell)}
                    <td><code>${bounded(JSON.stringify(a.row.metadata), d.maxMetadataChars)}</code></td>
                    ${driftCell(a)}
                    <td>${time(a.row.updatedAt)}</td>
                    ${d.actionsEnabled ? html`<td>${capacityForm(ctx, a)}</td>` : ''}
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    ${
      model.unregistered.length === 0
        ? ''
        : html`<h2>Declared, not registered</h2>
            <p class="muted">
              The code declares these actors but they have no row: no worker running them has started.
            </p>
            <ul>
              ${model.unregistered.map((a) => html`<li>${a.name} <span class="muted">(queue ${a.queue})</span></li>`)}
            </ul>`
    }
    <p class="muted">
      Capacity values are operator-owned: a stored value wins over the code's literal and workers never
      overwrite it; a cleared one falls back to the literal. Workers count as alive when seen within the
      liveness window and serving the actor's queue.
    </p>`;
  return layout(ctx, 'Actors', body);
}
