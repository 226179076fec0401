import { createServer } from 'node:net';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { plain } from '../../helpers/actors.js';
import { migratedSchema, type TestSchema } from '../../helpers/db.js';
import { probe } from '../../helpers/health-probe.js';
import { startTestWorker, testWorkerSettings } from '../../helpers/in-process-worker.js';
import { makeScratchDir } from '../../helpers/scratch-dir.js';
import { silentLogger } from '../../../src/obs/logger.js';
import { Worker } from '../../../src/worker/worker.js';

let db: TestSchema;
const dir = makeScratchDir('taskq-worker-health-');
let n = 0;
const socketPath = (): string => join(dir, `w${++n}.sock`);

beforeAll(async () => {
  db = await migratedSchema('whealth');
});
afterAll(async () => {
  await db?.drop();
});

describe('Worker health endpoints', () => {
  it('serves /ready with the Postgres ping and the checks registered on worker.health', async () => {
    let cacheUp = false;
    const worker = new Worker({
      actors: [plain],
      settings: testWorkerSettings(db.schema, {
        healthEnabled: true,
        healthPort: 0,
        healthHost: '127.0.0.1',
        healthSocketPath: socketPath(),
        healthReadinessCheckTimeout: '200ms',
      }),
      logger: silentLogger,
    });
    // Registered before start; the check reads state of the application's own.
    const off = worker.health.registerReadinessCheck('cache', () => cacheUp);
    await worker.start();
    try {
      const tcp = worker.healthServer!.tcpAddress!;
      const socket = { socketPath: worker.healthServer!.socketPath! };
      const notReady = await probe(tcp, '/ready');
      expect(notReady).toMatchObject({
        status: 503,
        body: {
          status: 'not-ready',
          phase: 'running',
          checks: { postgres: { ok: true }, cache: { ok: false, error: 'returned false' } },
        },
      });
      cacheUp = true;
      expect(await probe(socket, '/ready')).toMatchObject({ status: 200, body: { status: 'ready' } });
      // Registered after start: a check that hangs is cut off at its timeout.
      worker.health.registerReadinessCheck('hangs', () => new Promise(() => undefined));
      const hung = await probe(tcp, '/ready');
      expect(hung).toMatchObject({ status: 503, body: { checks: { hangs: { ok: false } } } });
      console.log(`/ready with a hanging check (timeout 200 ms) answered in ${hung.ms} ms`);
      off();
      expect(await probe(tcp, '/live')).toMatchObject({
        status: 200,
        body: { status: 'live', phase: 'running' },
      });
      // /tasks is off by default.
      expect((await probe(socket, '/tasks')).status).toBe(404);
    } finally {
      await worker.stop();
    }
    expect(worker.healthServer!.tcpAddress).toBeNull();
    expect(worker.healthServer!.socketPath).toBeNull();
  });

  it('opens no listener with healthEnabled false and no healthPort', async () => {
    const worker = await startTestWorker([plain], db.schema, { healthEnabled: false });
    try {
      expect(worker.healthServer).toBeNull();
    } finally {
      await worker.stop();
    }
  });

  it('refuses to start when the health port is taken, or an explicit socket path is in use', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as { port: number }).port;
    const path = socketPath();
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(path, r));
    try {
      const onPort = new Worker({
        actors: [plain],
        settings: testWorkerSettings(db.schema, {
          healthPort: port,
          healthHost: '127.0.0.1',
          healthEnabled: false,
        }),
        logger: silentLogger,
      });
      await expect(onPort.start()).rejects.toMatchObject({ code: 'EADDRINUSE' });
      expect(await onPort.stopped).toBe('fatal');
      const onSocket = new Worker({
        actors: [plain],
        settings: testWorkerSettings(db.schema, { healthEnabled: true, healthSocketPath: path }),
        logger: silentLogger,
      });
      await expect(onSocket.start()).rejects.toThrow(/in use by another live process/);
      expect(await onSocket.stopped).toBe('fatal');
    } finally {
      await new Promise<void>((r) => taken.close(() => r()));
      await new Promise<void>((r) => holder.close(() => r()));
    }
  });
});
