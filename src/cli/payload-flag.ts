import { PayloadTooLarge } from '../errors/payload-too-large.js';
import { PayloadValidationError } from '../errors/payload-validation-error.js';
import { CliExit } from './io.js';

/**
 * A `--payload` flag's JSON text as a value, or exit 2 naming the flag (the text cut at 80
 * characters). `undefined` when the flag was not given.
 */
export function parsePayloadFlag(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new CliExit(
      2,
      `--payload: ${JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}...` : text)} is invalid: must be JSON (${(err as Error).message})`,
    );
  }
}

/**
 * The exit for a payload the client refused (its schema, or its size), naming `--payload` rather
 * than the API's field; null for any other error.
 */
export function payloadFlagExit(err: unknown): CliExit | null {
  if (err instanceof PayloadTooLarge && err.message.startsWith(err.field))
    return new CliExit(2, `--payload${err.message.slice(err.field.length)}`);
  if (err instanceof PayloadValidationError || err instanceof PayloadTooLarge)
    return new CliExit(2, `--payload: ${err.message}`);
  return null;
}
