/**
 * Workers starting together on one host with the default socket path race for it: one binds it, the
 * others see it in use (whichever step of the bind they lose at), none fails.
 */
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { bindUnixSocket, removeUnixSocket } from '../../../src/obs/health/bind-unix-socket.js';

describe('bindUnixSocket', () => {
  it('binds once when several servers race for one path; the others report it in use', async () => {
    const path = join(tmpdir(), `taskq-race-${process.pid}-${Date.now()}.sock`);
    const servers = Array.from({ length: 6 }, () => createServer());
    try {
      const results = await Promise.all(servers.map((s) => bindUnixSocket(s, path)));
      const bound = results.filter((r) => r.bound);
      expect(bound).toHaveLength(1);
      expect(results.filter((r) => !r.bound).every((r) => !r.bound && r.reason === 'in-use')).toBe(true);
      const winner = bound[0];
      if (winner?.bound) await removeUnixSocket(path, winner.ino);
    } finally {
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    }
  });
});
