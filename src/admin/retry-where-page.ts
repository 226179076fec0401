import type { RetryWherePreview } from '../client/taskq.js';
import { html } from './html.js';
import { FILTER_KEYS, filterQueryString, type JobsQuery } from './jobs-page.js';
import { csrfField, layout, type PageContext } from './layout.js';

const plural = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;

/**
 * The confirmation page of a retry-by-filter: the filter, how many failed, crashed, cancelled or
 * abandoned jobs the retry would send back now (`retryWhere(…, { dryRun: true })`) and a form that
 * posts the filter and that count back. `preview` null: the filter was refused (`problem` says why)
 * and there is no form.
 */
export function retryPreviewPage(
  ctx: PageContext,
  query: JobsQuery,
  preview: RetryWherePreview | null,
  problem: string | null,
): string {
  const given = FILTER_KEYS.filter((k) => query[k]);
  const back = `${ctx.base}/jobs${filterQueryString(query) === '' ? '' : `?${filterQueryString(query)}`}`;
  const body = html`<h1>Retry matching jobs</h1>
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
        : preview.retried === 0
          ? html`<p id="retry-count" data-count="0">
              No failed, crashed, cancelled or abandoned job matches: nothing to retry.
            </p>`
          : html`<p id="retry-count" data-count="${preview.retried}">
                <strong>${plural(preview.retried, 'failed, crashed, cancelled or abandoned job')}</strong>
                would go back to pending with a fresh attempt budget. Jobs that fail or are pruned before you
                confirm change the count; if more match then, you are asked again.
              </p>
              <form method="post" action="${ctx.base}/jobs/retry-where">
                ${csrfField(ctx)}
                ${given.map((k) => html`<input type="hidden" name="${k}" value="${query[k]}" />`)}
                <input type="hidden" name="expected" value="${preview.retried}" />
                <button type="submit" id="confirm-retry">Retry ${plural(preview.retried, 'job')}</button>
              </form>`
    }
    <p><a href="${back}">Back to the jobs</a></p>`;
  return layout(ctx, 'Retry matching jobs', body);
}
