/**
 * Escaped HTML for the admin pages. Every interpolated value is escaped unless it is already
 * {@link SafeHtml} (the output of another `html` template or {@link raw}), so a job's error
 * message or payload can never inject markup: escaping is the default, not a step to remember.
 */

/** A piece of markup that is already safe to emit as-is. */
export class SafeHtml {
  /** The markup. */
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  /** The markup, for `reply.send`. */
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for an HTML text node or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** Interpolation values `html` accepts: text is escaped; arrays are concatenated; null/false render nothing. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(render).join('');
  return escapeHtml(String(value));
}

/** Tagged template producing {@link SafeHtml}, escaping every interpolated value. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new SafeHtml(out);
}

/** Marks trusted markup (a constant written in this code base) as safe. Never pass user data. */
export function raw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

/**
 * Text cut to at most `maxChars` characters, with a marker saying how much was left out, so a
 * huge payload or traceback cannot make a page enormous.
 */
export function bounded(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}\n… (${text.length - maxChars} more characters not shown)`;
}

/** `2026-03-29 01:30:00 UTC`: an instant as UTC text, to the second. */
export function utcText(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/**
 * A timestamp: `<time datetime="<UTC ISO>" title="<UTC> UTC">`. Without script the page shows the
 * UTC value; admin.js rewrites the text to the browser's zone and leaves the UTC value in `title`
 * (shown on hover), so an operator sees local time and can still quote the stored instant.
 */
export function time(date: Date | null | undefined): SafeHtml {
  if (!date) return html`<span class="muted">—</span>`;
  const utc = utcText(date);
  return html`<time datetime="${date.toISOString()}" title="${utc}">${utc}</time>`;
}
