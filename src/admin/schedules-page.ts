import type { ScheduleFireRecord, ScheduleRecord } from '../backend/schedule-types.js';
import { bounded, html, time, type SafeHtml } from './html.js';
import { csrfField, layout, type PageContext } from './layout.js';

/** The schedules list's query string. */
export interface SchedulesQuery {
  /** Only this actor's schedules. */
  actor?: string;
  /** `yes` or `no`: only enabled or only disabled schedules. */
  enabled?: string;
}

function enabledText(s: ScheduleRecord): SafeHtml {
  return s.enabled
    ? html`<span class="status status-succeeded">enabled</span>`
    : html`<span class="status status-failed">disabled</span>`;
}

/** The schedules list: every cron schedule (by actor and name), with its next slot and state. */
export function schedulesPage(
  ctx: PageContext,
  query: SchedulesQuery,
  schedules: ScheduleRecord[] | null,
  problem: string | null,
): string {
  const body = html`<h1>Schedules</h1>
    <form class="filters" method="get" action="${ctx.base}/schedules">
      <label>Actor<input name="actor" value="${query.actor ?? ''}" /></label>
      <label
        >State<select name="enabled">
          <option value="">any</option>
          <option value="yes" ${query.enabled === 'yes' ? html` selected` : ''}>enabled</option>
          <option value="no" ${query.enabled === 'no' ? html` selected` : ''}>disabled</option>
        </select></label
      >
      <button type="submit">Filter</button>
    </form>
    ${problem === null ? '' : html`<div class="banner" role="alert">${problem}</div>`}
    ${
      schedules === null
        ? ''
        : schedules.length === 0
          ? html`<p class="muted">No schedule matches.</p>`
          : html`<table>
              <thead>
                <tr>
                  <th>Actor</th>
                  <th>Name</th>
                  <th>Expression</th>
                  <th>Zone</th>
                  <th>DST</th>
                  <th>State</th>
                  <th>Next fire</th>
                  <th>Last fired</th>
                  <th>Failures</th>
                </tr>
              </thead>
              <tbody>
                ${schedules.map(
                  (s) =>
                    html`<tr>
                      <td><a href="${ctx.base}/schedules/${s.id}">${s.actor}</a></td>
                      <td>
                        <a href="${ctx.base}/schedules/${s.id}"
                          >${s.name === '' ? html`<span class="muted">(unnamed)</span>` : s.name}</a
                        >
                      </td>
                      <td><code>${s.cronExpr}</code></td>
                      <td>${s.timezone}</td>
                      <td>${s.dstStrategy}</td>
                      <td>${enabledText(s)}</td>
                      <td>${time(s.nextFireAt)}</td>
                      <td>${time(s.lastFiredAt)}</td>
                      <td>${s.consecutiveFailures}</td>
                    </tr>`,
                )}
              </tbody>
            </table>`
    }`;
  return layout(ctx, 'Schedules', body);
}

/** What the schedule page shows besides the record. */
export interface SchedulePageData {
  /** The schedule as read. */
  schedule: ScheduleRecord;
  /** Its coming slots, the stored next one first (`ScheduleHandle.nextFireTimes`). */
  nextFires: Date[];
  /** Its most recent fires, newest first. */
  fires: ScheduleFireRecord[];
  /** May the user read the static payload? */
  readPayloads: boolean;
  /** Show the run-now / enable / disable / skip buttons. */
  actionsEnabled: boolean;
  /** Bound on the shown payload, characters. */
  maxShownChars: number;
  /** Bound on the shown last error, characters. */
  maxTracebackChars: number;
  /** The outcome of the action that led here (`?done=`), a fixed text. */
  notice: string | null;
}

function actionForm(ctx: PageContext, s: ScheduleRecord, action: string, label: string, extra?: SafeHtml) {
  return html`<form class="inline" method="post" action="${ctx.base}/schedules/${s.id}/${action}">
    ${csrfField(ctx)}${extra ?? ''}<button type="submit">${label}</button>
  </form>`;
}

function payloadSection(d: SchedulePageData): SafeHtml {
  const s = d.schedule;
  if (s.payloadFactory !== null)
    return html`<p>Built at each fire by the payload factory <code>${s.payloadFactory}</code>.</p>`;
  if (s.staticPayload === undefined) return html`<p class="muted">No payload (each job gets none).</p>`;
  if (!d.readPayloads)
    return html`<p class="muted">The payload is hidden: your account may not read job payloads.</p>`;
  return html`<pre>${bounded(JSON.stringify(s.staticPayload, null, 2) ?? 'null', d.maxShownChars)}</pre>`;
}

/** One schedule: its definition, next slots, recent fires and, with actions, what can be done to it. */
export function schedulePage(ctx: PageContext, d: SchedulePageData): string {
  const s = d.schedule;
  const actions = !d.actionsEnabled
    ? ''
    : html`<p>
        ${actionForm(ctx, s, 'run-now', 'Run now')}
        ${s.enabled ? actionForm(ctx, s, 'disable', 'Disable') : actionForm(ctx, s, 'enable', 'Enable')}
        ${
          s.nextFireAt === null
            ? ''
            : actionForm(
                ctx,
                s,
                'skip',
                'Skip next',
                // The slot this page showed: a repeated click skips nothing more (see skipNext).
                html`<input type="hidden" name="slot" value="${s.nextFireAt.toISOString()}" />`,
              )
        }
      </p>`;
  const title = `${s.actor}${s.name === '' ? '' : ` / ${s.name}`}`;
  const body = html`<h1>Schedule <code>${title}</code></h1>
    ${d.notice === null ? '' : html`<div class="banner" role="status">${d.notice}</div>`} ${actions}
    <dl class="row">
      <dt>Id</dt>
      <dd><code>${s.id}</code></dd>
      <dt>Actor</dt>
      <dd><a href="${ctx.base}/jobs?actor=${encodeURIComponent(s.actor)}">${s.actor}</a></dd>
      <dt>Name</dt>
      <dd>${s.name === '' ? html`<span class="muted">(unnamed)</span>` : s.name}</dd>
      <dt>Expression</dt>
      <dd><code id="schedule-expr">${s.cronExpr}</code></dd>
      <dt>Zone</dt>
      <dd>${s.timezone}</dd>
      <dt>DST strategy</dt>
      <dd>${s.dstStrategy}</dd>
      <dt>State</dt>
      <dd id="schedule-state">${enabledText(s)}</dd>
      <dt>Next fire</dt>
      <dd id="schedule-next">${time(s.nextFireAt)}</dd>
      <dt>Last fired</dt>
      <dd>${time(s.lastFiredAt)}</dd>
      <dt>Failures in a row</dt>
      <dd>${s.consecutiveFailures}</dd>
      <dt>Last error</dt>
      <dd>${s.lastFireError === null ? '—' : bounded(s.lastFireError, d.maxTracebackChars)}</dd>
      <dt>Identity key</dt>
      <dd>${s.identityKey ?? '—'}</dd>
      <dt>Created</dt>
      <dd>${time(s.createdAt)}</dd>
      <dt>Updated</dt>
      <dd>${time(s.updatedAt)}</dd>
    </dl>
    <h2>Payload</h2>
    ${payloadSection(d)}
    <h2>Next fire times</h2>
    ${
      d.nextFires.length === 0
        ? html`<p class="muted">The expression has no slot left.</p>`
        : html`<ol id="schedule-next-fires">
            ${d.nextFires.map((t) => html`<li>${time(t)}</li>`)}
          </ol>`
    }
    ${s.enabled ? '' : html`<p class="muted">Disabled: these slots do not fire until it is enabled.</p>`}
    <h2>Recent fires</h2>
    ${
      d.fires.length === 0
        ? html`<p class="muted">No fire recorded.</p>`
        : html`<table>
            <thead>
              <tr>
                <th>Slot</th>
                <th>Fired</th>
                <th>Job</th>
              </tr>
            </thead>
            <tbody>
              ${d.fires.map(
                (f) =>
                  html`<tr>
                    <td>${time(f.fireAt)}</td>
                    <td>${time(f.firedAt)}</td>
                    <td>
                      <a href="${ctx.base}/jobs/${f.jobId}"><code>${f.jobId}</code></a>
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }`;
  return layout(ctx, `Schedule ${title}`, body);
}
