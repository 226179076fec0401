import type { RateLimitBucketRow, ReservationRow } from '../ratelimit/rate-limit-admin.js';
import type { RateLimitState } from '../ratelimit/types.js';
import { html, time, type SafeHtml } from './html.js';
import { csrfField, layout, type PageContext } from './layout.js';

/** One rate limit and what a peek found (or why there is no state to show). */
export interface LimitView {
  /** The published row (shape and store). */
  row: RateLimitBucketRow;
  /** The peeked state, or null with `problem`. */
  state: RateLimitState | null;
  /** Why there is no state (`state needs Redis`, a read failure). */
  problem: string | null;
}

/** Keyed rate limits of one base and shape, summarised. */
export interface KeyedLimitGroup {
  /** `<prefix>:*`. */
  label: string;
  /** The shape the group's rows share (any one of them). */
  shape: RateLimitBucketRow;
  /** How many keys are published. */
  keys: number;
  /** The most recent use of any key. */
  lastUsedAt: Date;
  /** The most recently used keys, peeked (empty for users who may not read payloads). */
  shown: LimitView[];
}

/** Keyed reservations of one base, summed. */
export interface KeyedReservationGroup {
  /** `<prefix>:*`. */
  label: string;
  /** Keys with slots. */
  keys: number;
  /** Slots over every key. */
  slots: number;
  /** Live holders over every key. */
  held: number;
  /** The busiest keys (empty for users who may not read payloads). */
  shown: ReservationRow[];
}

/** Everything the rate-limits page shows. */
export interface RateLimitsView {
  /** Static rate limits, peeked (bounded). */
  limits: LimitView[];
  /** Static rate limits beyond the bound, counted only. */
  limitsNotShown: number;
  /** Keyed rate limits by group (bounded, most recently used first). */
  keyedLimits: KeyedLimitGroup[];
  /** Keyed rate-limit groups beyond the bound, counted only. */
  keyedLimitGroupsNotShown: number;
  /** Static reservations (bounded). */
  reservations: ReservationRow[];
  /** Static reservations beyond the bound, counted only. */
  reservationsNotShown: number;
  /** Keyed reservations by group (bounded, busiest first). */
  keyedReservations: KeyedReservationGroup[];
  /** Keyed reservation groups beyond the bound, counted only. */
  keyedReservationGroupsNotShown: number;
  /** The UI's client has Redis (Redis-backed state can be read). */
  redis: boolean;
  /** The user may see keys (they come from payloads). */
  readPayloads: boolean;
  /** Reset buttons are shown. */
  canReset: boolean;
  /** A fixed outcome text after an action, or null. */
  notice: string | null;
}

/** "N more … are not shown", or nothing. */
function notShown(n: number, what: string): SafeHtml | '' {
  return n > 0 ? html`<p class="muted">${n} more ${what} are not shown.</p>` : '';
}

const fixed = (n: number): string => (Number.isInteger(n) ? String(n) : n.toFixed(2));

/** The configured shape: capacity and refill, or limit per window. */
function shapeOf(r: RateLimitBucketRow): string {
  if (r.kind === 'token_bucket')
    return r.refillPerSecond === null || r.refillPerSecond === 0
      ? `capacity ${r.capacity}, fixed quota (never refills)`
      : `capacity ${r.capacity}, refill ${fixed(r.refillPerSecond)}/s`;
  return `limit ${r.capacity} per ${fixed((r.windowMs ?? 0) / 1000)} s (${r.kind === 'gcra' ? 'GCRA' : 'log'})`;
}

/** The decoded state: what is left now, and when the next admission fits. */
function stateOf(v: LimitView): SafeHtml {
  const s = v.state;
  if (s === null) return html`<span class="muted">${v.problem ?? ''}</span>`;
  const left =
    s.kind === 'token_bucket'
      ? `${fixed(s.tokensRemaining)} / ${s.capacity ?? v.row.capacity} tokens left`
      : `${fixed((s.limit ?? v.row.capacity) - s.remaining)} / ${s.limit ?? v.row.capacity} used in the window (${fixed(s.remaining)} left)`;
  const wait = !s.isExhausted
    ? ''
    : s.retryAfterMs === null
      ? html` <strong class="status-failed">exhausted</strong> (fixed quota: only a reset refills it)`
      : html` <strong class="status-failed">exhausted</strong>, next admission in ${Math.ceil(s.retryAfterMs)}
          ms`;
  // After a Redis outage the Postgres fallback answers; say so rather than hide it.
  const store = s.backend === v.row.backend ? '' : html` <span class="muted">(read from ${s.backend})</span>`;
  return html`${left}${wait}${store}`;
}

function resetButton(ctx: PageContext, view: RateLimitsView, row: RateLimitBucketRow): SafeHtml | '' {
  if (!view.canReset || (row.backend === 'redis' && !view.redis)) return '';
  return html`<form
    class="inline"
    method="post"
    action="${ctx.base}/rate-limits/${encodeURIComponent(row.name)}/reset"
  >
    ${csrfField(ctx)}<button type="submit">Reset</button>
  </form>`;
}

function limitRow(ctx: PageContext, view: RateLimitsView, v: LimitView): SafeHtml {
  return html`<tr>
    <td><code>${v.row.name}</code></td>
    <td>${v.row.kind}</td>
    <td>${v.row.backend}</td>
    <td>${shapeOf(v.row)}</td>
    <td>${stateOf(v)}</td>
    <td>${time(v.row.lastUsedAt)}</td>
    <td>${resetButton(ctx, view, v.row)}</td>
  </tr>`;
}

const LIMIT_HEAD = html`<thead>
  <tr>
    <th>Name</th>
    <th>Kind</th>
    <th>Store</th>
    <th>Shape</th>
    <th>State now</th>
    <th>Last used</th>
    <th></th>
  </tr>
</thead>`;

function keyedLimitsSection(ctx: PageContext, view: RateLimitsView): SafeHtml | '' {
  if (view.keyedLimits.length === 0) return '';
  return html`<h2>Keyed rate limits</h2>
    ${view.keyedLimits.map(
      (g) =>
        html`<h3><code>${g.label}</code></h3>
          <p>
            ${g.keys} key${g.keys === 1 ? '' : 's'} · ${g.shape.kind} · ${g.shape.backend} ·
            ${shapeOf(g.shape)} · last used ${time(g.lastUsedAt)}
          </p>
          ${
            g.shown.length === 0
              ? view.readPayloads
                ? ''
                : html`<p class="muted">Keys are hidden: they come from job payloads.</p>`
              : html`<table>
                    ${LIMIT_HEAD}
                    <tbody>
                      ${g.shown.map((v) => limitRow(ctx, view, v))}
                    </tbody>
                  </table>
                  ${
                    g.keys > g.shown.length
                      ? html`<p class="muted">
                          The ${g.shown.length} most recently used keys are shown; ${g.keys - g.shown.length}
                          more are not.
                        </p>`
                      : ''
                  }`
          }`,
    )}
    ${notShown(view.keyedLimitGroupsNotShown, 'keyed rate-limit groups (the least recently used)')}`;
}

function reservationsSection(view: RateLimitsView): SafeHtml {
  const rows = (rs: readonly ReservationRow[]) =>
    rs.map(
      (r) =>
        html`<tr>
          <td><code>${r.name}</code></td>
          <td>${r.held} / ${r.slots} held${r.held >= r.slots ? html` <strong>(full)</strong>` : ''}</td>
          <td>${time(r.lastUsedAt)}</td>
        </tr>`,
    );
  const head = html`<thead>
    <tr>
      <th>Name</th>
      <th>Holders</th>
      <th>Last used</th>
    </tr>
  </thead>`;
  return html`<h2>Reservations</h2>
    <p class="muted">
      Slots free themselves when their holders finish or their leases expire: they are never reset.
    </p>
    ${
      view.reservations.length === 0 && view.keyedReservations.length === 0
        ? html`<p class="muted">No reservation has slots.</p>`
        : ''
    }
    ${
      view.reservations.length === 0
        ? ''
        : html`<table>
            ${head}
            <tbody>
              ${rows(view.reservations)}
            </tbody>
          </table>`
    }
    ${notShown(view.reservationsNotShown, 'reservations')}
    ${view.keyedReservations.map(
      (g) =>
        html`<h3><code>${g.label}</code></h3>
          <p>${g.keys} key${g.keys === 1 ? '' : 's'} · ${g.held} / ${g.slots} slots held over all keys</p>
          ${
            g.shown.length === 0
              ? view.readPayloads
                ? ''
                : html`<p class="muted">Keys are hidden: they come from job payloads.</p>`
              : html`<table>
                    ${head}
                    <tbody>
                      ${rows(g.shown)}
                    </tbody>
                  </table>
                  ${
                    g.keys > g.shown.length
                      ? html`<p class="muted">
                          The ${g.shown.length} busiest keys are shown; ${g.keys - g.shown.length} more are
                          not.
                        </p>`
                      : ''
                  }`
          }`,
    )}
    ${notShown(view.keyedReservationGroupsNotShown, 'keyed reservation groups (the least busy)')}`;
}

/** The rate-limits page: published limits with their peeked state, keyed groups, reservations. */
export function rateLimitsPage(ctx: PageContext, view: RateLimitsView): string {
  const body = html`<h1>Rate limits</h1>
    ${view.notice === null ? '' : html`<div class="banner" role="status">${view.notice}</div>`}
    <p class="muted">
      What workers publish at startup (memory-backed limits live in one process and are not listed). State is
      peeked: no token is spent.
      ${view.redis ? '' : html`This UI has no Redis, so Redis-backed limits show no state.`}
    </p>
    ${
      view.limits.length === 0 && view.keyedLimits.length === 0
        ? html`<p class="muted">No rate limit is published.</p>`
        : ''
    }
    ${
      view.limits.length === 0
        ? ''
        : html`<table>
            ${LIMIT_HEAD}
            <tbody>
              ${view.limits.map((v) => limitRow(ctx, view, v))}
            </tbody>
          </table>`
    }
    ${notShown(view.limitsNotShown, 'rate limits')} ${keyedLimitsSection(ctx, view)}
    ${reservationsSection(view)}`;
  return layout(ctx, 'Rate limits', body);
}
