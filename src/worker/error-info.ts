import type { ErrorInfo } from '../backend/worker-types.js';
import { storableText } from '../core/text-checks.js';
import { errorClassName } from '../retry/retry-classifier.js';

const URI_CREDENTIALS = /([a-z][a-z0-9+.-]*:\/\/)([^/@\s:]+)(:[^/@\s]*)?@/gi;

/**
 * Turns a thrown value into what is stored on the job and its attempt: class name, message (with
 * URI credentials masked, Postgres `DETAIL:` lines dropped when redaction is on, truncated to
 * `maxChars` with the dropped count appended) and stack, each made storable ({@link storableText}).
 */
export function toErrorInfo(error: unknown, options: { maxChars: number; redact: boolean }): ErrorInfo {
  const errorClass = storableText(errorClassName(error));
  let message =
    error instanceof Error ? error.message : typeof error === 'string' ? error : safeString(error);
  let traceback = error instanceof Error ? (error.stack ?? null) : null;
  const clean = (text: string): string => {
    let out = storableText(text).replace(URI_CREDENTIALS, '$1***@');
    if (options.redact)
      out = out
        .split('\n')
        .filter((line) => !/^\s*DETAIL:/.test(line))
        .join('\n');
    return out;
  };
  message = clean(message);
  if (message.length > options.maxChars) {
    message = `${message.slice(0, options.maxChars)}… (${message.length - options.maxChars} more characters)`;
  }
  if (traceback !== null) {
    traceback = clean(traceback);
    if (traceback.length > options.maxChars * 4) traceback = traceback.slice(0, options.maxChars * 4);
  }
  return { errorClass, message, traceback };
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
