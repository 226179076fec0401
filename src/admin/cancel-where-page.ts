import type { CancelWherePreview } from '../client/bulk-options.js';
import { bulkActionForm, bulkActionPage } from './bulk-action-page.js';
import { html } from './html.js';
import type { JobsQuery } from './jobs-page.js';
import type { PageContext } from './layout.js';

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
  const content =
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
            ${bulkActionForm(ctx, 'cancel-where', query, preview.totalAffected, {
              id: 'confirm-cancel',
              text: `Cancel ${plural(preview.totalAffected, 'job')}`,
            })}`;
  return bulkActionPage(ctx, { title: 'Cancel matching jobs', query, problem, content });
}
