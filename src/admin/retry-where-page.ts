import type { RetryWherePreview } from '../client/bulk-options.js';
import { bulkActionForm, bulkActionPage } from './bulk-action-page.js';
import { html } from './html.js';
import type { JobsQuery } from './jobs-page.js';
import type { PageContext } from './layout.js';

const plural = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;

/**
 * The confirmation page of a retry-by-filter: the filter, how many failed, crashed, cancelled or
 * abandoned jobs the retry would send back now (`retryWhere(…, { dryRun: true })`) and a form that
 * posts the filter and that count back. `preview` null: the filter was refused (`problem` says
 * why) and there is no form.
 */
export function retryPreviewPage(
  ctx: PageContext,
  query: JobsQuery,
  preview: RetryWherePreview | null,
  problem: string | null,
): string {
  const content =
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
            ${bulkActionForm(ctx, 'retry-where', query, preview.retried, {
              id: 'confirm-retry',
              text: `Retry ${plural(preview.retried, 'job')}`,
            })}`;
  return bulkActionPage(ctx, { title: 'Retry matching jobs', query, problem, content });
}
