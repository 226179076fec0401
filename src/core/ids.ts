import { randomFillSync } from 'node:crypto';

/** A job id: a UUIDv7 string (time-ordered, so ids sort with creation time). */
export type JobId = string;

const pool = new Uint8Array(4096);
let poolOffset = pool.length;
let lastMs = -1;
let seq = 0;

function randomBytes(n: number): Uint8Array {
  if (poolOffset + n > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const out = pool.subarray(poolOffset, poolOffset + n);
  poolOffset += n;
  return out;
}

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/**
 * Returns a new UUIDv7 (RFC 9562). Ids made in one process are strictly increasing: within one
 * millisecond a 12-bit counter in `rand_a` keeps them ordered, which keyset pagination relies on.
 */
export function newJobId(nowMs: number = Date.now()): JobId {
  let ms = nowMs;
  if (ms <= lastMs) {
    seq += 1;
    if (seq > 0xfff) {
      // Counter exhausted within one millisecond: borrow the next millisecond.
      lastMs += 1;
      seq = 0;
    }
    ms = lastMs;
  } else {
    lastMs = ms;
    seq = 0;
  }
  const r = randomBytes(8);
  const b = new Uint8Array(16);
  b[0] = Math.floor(ms / 2 ** 40) & 0xff;
  b[1] = Math.floor(ms / 2 ** 32) & 0xff;
  b[2] = (ms >>> 24) & 0xff;
  b[3] = (ms >>> 16) & 0xff;
  b[4] = (ms >>> 8) & 0xff;
  b[5] = ms & 0xff;
  b[6] = 0x70 | ((seq >>> 8) & 0x0f);
  b[7] = seq & 0xff;
  b[8] = 0x80 | ((r[0] as number) & 0x3f);
  for (let i = 1; i < 8; i++) b[8 + i] = r[i] as number;
  let s = '';
  for (let i = 0; i < 16; i++) {
    s += HEX[b[i] as number];
    if (i === 3 || i === 5 || i === 7 || i === 9) s += '-';
  }
  return s;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when `value` is a canonical UUID string (any version). */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_RE.test(value);
}
