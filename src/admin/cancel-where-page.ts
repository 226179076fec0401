import type { CancelWherePreview } from '../client/taskq.js';
import { html } from './html.js';
import { FILTER_KEYS, filterQueryString, type JobsQuery } from './jobs-page.js';
import { csrfField, layout, type PageContext } from './layout.js';

const plural = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;

/**
 * The confirmation page of a cancel-by-filter: the filter, how many jobs the cancel would change
 * now (`cancelWhere(…, { dryRun: true })`) and a form that posts the filter and that count back.
 * `preview` null: the filter was refused (`problem` says why) and there is no form.
 */
export function cancelPreviewPage(
  ctx: PageContext,
  query: JobsQuery,
  preview: CancelWherePreview | null,
  problem: string | null,
): string {
  const given = FILTER_KEYS.filter((k) => query[k]);
  const back = `${ctx.base}/jobs${filterQueryString(query) === '' ? '' : `?${filterQueryString(query)}`}`;
  const body = html`<h1>Cancel matching jobs</h1>
    ${problem === null ? '' : html`<div class="banner" role="alert">${problem}</div>`}
    ${
      given.length === 0
        ? ''
        : html`<dl class="row">
            ${given.map(
              (k) =>
                html`<dt>${k}</dt>
                  <dd>${query[k]}</dd>`,
            )}
          </dl>`
    }
    ${
      preview === null
        ? ''
        : preview.totalAffected === 0
          ? html`<p id="cancel-count" data-count="0">
              No pending, scheduled or running job matches: nothing to cancel.
            </p>`
          : html`<p id="cancel-count" data-count="${preview.totalAffected}">
                <strong>${plural(preview.totalAffected, 'job')}</strong> would be affected:
                ${plural(preview.cancelledDirectly, 'pending or scheduled job')} cancelled at once,
                ${plural(preview.cancelRequested, 'running job')} asked to cancel. Jobs that finish, start or
                arrive before you confirm change the count; if more match then, you are asked again.
              </p>
              <form method="post" action="${ctx.base}/jobs/cancel-where">
                ${csrfField(ctx)}
                ${given.map((k) => html`<input type="hidden" name="${k}" value="${query[k]}" />`)}
                <input type="hidden" name="expected" value="${preview.totalAffected}" />
                <button type="submit" id="confirm-cancel">
                  Cancel ${plural(preview.totalAffected, 'job')}
                </button>
              </form>`
    }
    <p><a href="${back}">Back to the jobs</a></p>`;
  return layout(ctx, 'Cancel matching jobs', body);
}
