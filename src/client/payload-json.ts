import type { ActorRef } from '../core/actor.js';
import { toJsonText, validateSchema } from '../core/schema-validation.js';
import { PayloadTooLarge } from '../errors/payload-too-large.js';
import type { EnqueueItem } from './batch-items.js';

/**
 * Default bound on a payload's JSON, in UTF-8 bytes: 1 MiB, the reference's ceiling for results and
 * progress data. A payload is copied into the job row, read by every claim and every `list()` page,
 * and kept until the job is pruned; large inputs belong elsewhere, passed by reference.
 */
export const DEFAULT_PAYLOAD_MAX_BYTES = 1024 * 1024;

/** Smallest and largest `payloadMaxBytes`: 1 KiB and 64 MiB (jsonb itself stops at 256 MiB). */
export const PAYLOAD_MAX_BYTES_RANGE = { min: 1024, max: 64 * 1024 * 1024 } as const;

/**
 * `text`, unless its UTF-8 size is above `maxBytes`.
 * @throws PayloadTooLarge naming `field`
 */
export function checkPayloadSize(text: string, field: string, maxBytes: number): string {
  // A UTF-16 code unit takes at most 3 bytes of UTF-8: most payloads are decided without counting.
  if (text.length * 3 <= maxBytes) return text;
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) throw new PayloadTooLarge(field, maxBytes, bytes);
  return text;
}

/**
 * The payload as JSON text, validated first when the actor has a schema (then asynchronously), and
 * at most `maxBytes` of UTF-8.
 */
export function payloadJson(
  ref: ActorRef<unknown, unknown>,
  payload: unknown,
  what: string,
  maxBytes: number,
): string | Promise<string> {
  if (!ref.payloadSchema)
    return checkPayloadSize(toJsonText(payload, { actor: ref.name, what }), what, maxBytes);
  return validateSchema(ref.payloadSchema, payload, {
    actor: ref.name,
    what,
    payloadSchemaVer: ref.payloadSchemaVersion,
  }).then((value) => checkPayloadSize(toJsonText(value, { actor: ref.name, what }), what, maxBytes));
}

/**
 * Every item's payload JSON. Actors without a schema serialise synchronously: a batch of 1,000 such
 * items makes no promises. A synchronous failure still waits on nothing, but the promises already
 * made are observed so that their own rejections are not reported as unhandled. `indexBase` is the
 * global index of `items[0]`, for error messages.
 */
export async function payloadJsons(
  refs: readonly ActorRef<unknown, unknown>[],
  items: readonly EnqueueItem[],
  maxBytes: number,
  indexBase = 0,
): Promise<string[]> {
  const out: (string | Promise<string>)[] = [];
  let async = false;
  try {
    for (let i = 0; i < items.length; i++) {
      const json = payloadJson(refs[i]!, items[i]!.payload, `items[${indexBase + i}].payload`, maxBytes);
      if (typeof json !== 'string') async = true;
      out.push(json);
    }
  } catch (err) {
    for (const json of out) if (typeof json !== 'string') json.catch(() => undefined);
    throw err;
  }
  return async ? Promise.all(out) : (out as string[]);
}
