import type { ActorRef } from '../core/actor.js';
import { toJsonText, validateSchema } from '../core/schema-validation.js';
import type { EnqueueItem } from './batch-items.js';

/** The payload as JSON text, validated first when the actor has a schema (then asynchronously). */
export function payloadJson(
  ref: ActorRef<unknown, unknown>,
  payload: unknown,
  what: string,
): string | Promise<string> {
  if (!ref.payloadSchema) return toJsonText(payload, { actor: ref.name, what });
  return validateSchema(ref.payloadSchema, payload, {
    actor: ref.name,
    what,
    payloadSchemaVer: ref.payloadSchemaVersion,
  }).then((value) => toJsonText(value, { actor: ref.name, what }));
}

/**
 * Every item's payload JSON. Actors without a schema serialise synchronously: a batch of 1,000 such
 * items makes no promises. A synchronous failure still waits on nothing, but the promises already
 * made are observed so that their own rejections are not reported as unhandled.
 */
export async function payloadJsons(
  refs: readonly ActorRef<unknown, unknown>[],
  items: readonly EnqueueItem[],
): Promise<string[]> {
  const out: (string | Promise<string>)[] = [];
  let async = false;
  try {
    for (let i = 0; i < items.length; i++) {
      const json = payloadJson(refs[i]!, items[i]!.payload, `items[${i}].payload`);
      if (typeof json !== 'string') async = true;
      out.push(json);
    }
  } catch (err) {
    for (const json of out) if (typeof json !== 'string') json.catch(() => undefined);
    throw err;
  }
  return async ? Promise.all(out) : (out as string[]);
}
