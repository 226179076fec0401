import { html, type SafeHtml } from './html.js';
import { FILTER_KEYS, filterQueryString, type JobsQuery } from './jobs-page.js';
import { csrfField, layout, type PageContext } from './layout.js';

/** What differs between the preview pages of the bulk actions (cancel matching, retry matching). */
export interface BulkActionPageSpec {
  /** The page's heading and title. */
  title: string;
  /** The filter fields given. */
  query: JobsQuery;
  /** Why the filter or the action was refused, or null. */
  problem: string | null;
  /** The count and the confirmation form (see {@link bulkActionForm}), or '' when refused. */
  content: SafeHtml | string;
}

/** A bulk action's preview page: the heading, the problem, the filter, the content, a way back. */
export function bulkActionPage(ctx: PageContext, spec: BulkActionPageSpec): string {
  const { query } = spec;
  const given = FILTER_KEYS.filter((k) => query[k]);
  const back = `${ctx.base}/jobs${filterQueryString(query) === '' ? '' : `?${filterQueryString(query)}`}`;
  const body = html`<h1>${spec.title}</h1>
    ${spec.problem === null ? '' : html`<div class="banner" role="alert">${spec.problem}</div>`}
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
    ${spec.content}
    <p><a href="${back}">Back to the jobs</a></p>`;
  return layout(ctx, spec.title, body);
}

/**
 * The confirmation form of a bulk action: posts the filter and the previewed count (`expected`) to
 * `<base>/jobs/<action>` with the CSRF token.
 */
export function bulkActionForm(
  ctx: PageContext,
  action: 'cancel-where' | 'retry-where',
  query: JobsQuery,
  expected: number,
  button: { id: string; text: string },
): SafeHtml {
  const given = FILTER_KEYS.filter((k) => query[k]);
  return html`<form method="post" action="${ctx.base}/jobs/${action}">
    ${csrfField(ctx)} ${given.map((k) => html`<input type="hidden" name="${k}" value="${query[k]}" />`)}
    <input type="hidden" name="expected" value="${expected}" />
    <button type="submit" id="${button.id}">${button.text}</button>
  </form>`;
}
