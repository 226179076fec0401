import { html, type SafeHtml } from './html.js';

/** What every page needs besides its body. */
export interface PageContext {
  /** The plugin's mount prefix without a trailing slash ('' at the root). */
  base: string;
  /** The signed-in user's name, or null without authentication. */
  user: string | null;
  /** The CSRF token for the page's forms. */
  csrfToken: string;
  /** Show a "Sign out" button (an SSO session is what signed this user in). Default false. */
  signOut?: boolean;
}

/** The navigation: every page of the UI, in order. */
export const NAV: readonly (readonly [path: string, label: string])[] = [
  ['/', 'Overview'],
  ['/jobs', 'Jobs'],
  ['/actors', 'Actors'],
  ['/queues', 'Queues'],
  ['/rate-limits', 'Rate limits'],
  ['/batches', 'Batches'],
  ['/schedules', 'Schedules'],
];

/** The shared page shell: header, navigation, stylesheet and script. */
export function layout(ctx: PageContext, title: string, body: SafeHtml): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="csrf-token" content="${ctx.csrfToken}" />
        <title>${title} · TaskQ</title>
        <link rel="icon" href="data:," />
        <link rel="stylesheet" href="${ctx.base}/assets/admin.css" />
        <script src="${ctx.base}/assets/admin.js" defer></script>
      </head>
      <body>
        <header>
          <span class="brand">TaskQ</span>
          <nav>${NAV.map(([path, label]) => html`<a href="${ctx.base}${path}">${label}</a>`)}</nav>
          <span class="muted">${ctx.user ?? ''}</span>
          ${
            ctx.signOut === true
              ? html`<form method="post" action="${ctx.base}/auth/logout">
                  ${csrfField(ctx)}<button type="submit">Sign out</button>
                </form>`
              : ''
          }
        </header>
        <main>${body}</main>
      </body>
    </html>`.value;
}

/** A hidden CSRF field for a state-changing form. */
export function csrfField(ctx: PageContext): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${ctx.csrfToken}" />`;
}
