// The benchmark's checkpoint before a measured phase (bench/lib/checkpoint.ts), against the real
// server: it runs one, and a server it cannot reach costs the phase nothing but a note.
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { checkpoint } from '../../bench/lib/checkpoint.js';
import { TEST_DSN } from '../helpers/db.js';

/** Checkpoints the server has run on request since its statistics were reset. */
async function requestedCheckpoints(): Promise<number> {
  const c = new pg.Client({ connectionString: TEST_DSN });
  await c.connect();
  try {
    const r = await c.query<{ n: string }>('SELECT checkpoints_req::text AS n FROM pg_stat_bgwriter');
    return Number(r.rows[0]!.n);
  } finally {
    await c.end();
  }
}

describe('checkpoint', () => {
  afterEach(() => vi.restoreAllMocks());

  it('runs a CHECKPOINT on the server', async () => {
    const before = await requestedCheckpoints();
    expect(await checkpoint(TEST_DSN)).toBe(true);
    expect(await requestedCheckpoints()).toBeGreaterThan(before);
    // A checkpoint writes every dirty buffer of the machine's server: while other suites fill it,
    // that can take well over the default 30 s.
  }, 180_000);

  it('resolves false, and says so once on stderr, when the server refuses it', async () => {
    const writes: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      writes.push(String(chunk));
      return true;
    });
    const nowhere = TEST_DSN.replace(/\/[^/?]*(\?|$)/, '/taskq_no_such_database$1');
    expect(await checkpoint(nowhere)).toBe(false);
    expect(await checkpoint(nowhere)).toBe(false);
    const notes = writes.filter((w) => w.includes('CHECKPOINT before measured phases failed'));
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('taskq_no_such_database');
  });
});
