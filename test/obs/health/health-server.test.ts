import { spawn } from 'node:child_process';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { connect, createServer as createNetServer, type Socket } from 'node:net';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { HealthServer, type HealthServerOptions } from '../../../src/obs/health/health-server.js';
import { bearerTokenMatches } from '../../../src/obs/health/bearer-token.js';
import type { ReadinessReport } from '../../../src/obs/health/readiness-probe.js';
import { silentLogger, type Logger } from '../../../src/obs/logger.js';
import { probe, type HealthTarget } from '../../helpers/health-probe.js';
import { makeScratchDir } from '../../helpers/scratch-dir.js';

const dir = makeScratchDir('taskq-health-');
let n = 0;
const socketPath = (): string => join(dir, `h${++n}.sock`);

const servers: HealthServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});

const READY: ReadinessReport = { status: 'ready', phase: 'running', checks: {} };

async function start(
  overrides: Partial<HealthServerOptions> = {},
): Promise<{ server: HealthServer; tcp: HealthTarget; socket: HealthTarget }> {
  const path = socketPath();
  const server = new HealthServer({
    tcp: { host: '127.0.0.1', port: 0 },
    socket: { path, required: true },
    token: null,
    requestTimeoutMs: 2000,
    maxHeaderBytes: 1024,
    phase: () => 'running',
    ready: () => Promise.resolve(READY),
    tasks: () => ({ jobs: [{ jobId: 'j1' }] }),
    logger: silentLogger,
    ...overrides,
  });
  servers.push(server);
  await server.start();
  return { server, tcp: server.tcpAddress!, socket: { socketPath: server.socketPath ?? path } };
}

/** Sends raw bytes and collects whatever comes back until the server closes the connection. */
function raw(target: HealthTarget, write: (s: Socket) => void): Promise<{ data: string; closed: true }> {
  return new Promise((resolve, reject) => {
    const s = 'socketPath' in target ? connect(target.socketPath) : connect(target.port, target.host);
    let data = '';
    s.on('data', (c) => (data += c.toString('utf8')));
    s.on('error', (err: NodeJS.ErrnoException) => {
      // A reset while the request was still being written is a drop all the same.
      if (err.code === 'ECONNRESET' || err.code === 'EPIPE') resolve({ data, closed: true });
      else reject(err);
    });
    s.on('close', () => resolve({ data, closed: true }));
    s.on('connect', () => write(s));
  });
}

describe('bearerTokenMatches', () => {
  it.each([
    [undefined, false],
    ['', false],
    ['Bearer', false],
    ['Bearer s3cret', true],
    ['bearer s3cret', true],
    ['Bearer  s3cret ', true],
    ['Bearer s3cre', false],
    ['Bearer s3cret2', false],
    ['Basic s3cret', false],
    ['Bearer s3cret extra', false],
  ])('%j → %s', (header, ok) => {
    expect(bearerTokenMatches(header, 's3cret')).toBe(ok);
  });
});

describe('HealthServer', () => {
  it('serves /live and /ready on TCP and on the Unix socket, GET and HEAD', async () => {
    const { tcp, socket } = await start();
    for (const target of [tcp, socket]) {
      const live = await probe(target, '/live');
      expect(live).toMatchObject({ status: 200, body: { status: 'live', phase: 'running' } });
      expect(live.headers.connection).toBe('close');
      expect(await probe(target, '/ready?verbose=1')).toMatchObject({ status: 200, body: READY });
      expect(await probe(target, '/ready', { method: 'HEAD' })).toMatchObject({ status: 200, body: null });
    }
  });

  it('answers 503 with the report when not ready', async () => {
    const report: ReadinessReport = {
      status: 'not-ready',
      phase: 'draining',
      checks: {},
    };
    const { tcp } = await start({ ready: () => Promise.resolve(report) });
    expect(await probe(tcp, '/ready')).toMatchObject({ status: 503, body: report });
  });

  it('404s unknown paths and 405s other methods', async () => {
    const { tcp, socket } = await start();
    for (const target of [tcp, socket]) {
      expect(await probe(target, '/')).toMatchObject({ status: 404 });
      expect(await probe(target, '/livez')).toMatchObject({ status: 404 });
      expect(await probe(target, '/live/')).toMatchObject({ status: 404 });
      for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS']) {
        const answer = await probe(target, '/ready', { method });
        expect(answer.status).toBe(405);
        expect(answer.headers.allow).toBe('GET, HEAD');
      }
    }
  });

  it('serves /tasks on the Unix socket only, and makes the socket owner-only', async () => {
    const { tcp, socket, server } = await start();
    expect(await probe(tcp, '/tasks')).toMatchObject({ status: 404 });
    expect(await probe(socket, '/tasks')).toMatchObject({ status: 200, body: { jobs: [{ jobId: 'j1' }] } });
    expect(statSync(server.socketPath!).mode & 0o777).toBe(0o600);
  });

  it('has no /tasks anywhere when it is not enabled', async () => {
    const { tcp, socket } = await start({ tasks: null });
    expect(await probe(tcp, '/tasks')).toMatchObject({ status: 404 });
    expect(await probe(socket, '/tasks')).toMatchObject({ status: 404 });
  });

  it('requires the bearer token on every route and listener when one is set', async () => {
    const { tcp, socket } = await start({ token: 'tok-123' });
    for (const target of [tcp, socket]) {
      for (const path of ['/live', '/ready', '/tasks', '/nope']) {
        const denied = await probe(target, path);
        expect(denied.status).toBe(401);
        expect(denied.headers['www-authenticate']).toMatch(/^Bearer/);
        expect(await probe(target, path, { headers: { authorization: 'Bearer tok-12' } })).toMatchObject({
          status: 401,
        });
      }
      const ok = { headers: { authorization: 'Bearer tok-123' } };
      expect(await probe(target, '/live', ok)).toMatchObject({ status: 200 });
      expect(await probe(target, '/ready', ok)).toMatchObject({ status: 200 });
    }
    expect(await probe(tcp, '/tasks', { headers: { authorization: 'Bearer tok-123' } })).toMatchObject({
      status: 404,
    });
  });

  it('drops a request whose headers exceed maxHeaderBytes, unanswered', async () => {
    const { tcp, socket } = await start({ maxHeaderBytes: 1024 });
    for (const target of [tcp, socket]) {
      const small = await raw(target, (s) => s.write('GET /live HTTP/1.1\r\nHost: x\r\n\r\n'));
      expect(small.data).toMatch(/^HTTP\/1.1 200/);
      const big = await raw(target, (s) =>
        s.write(`GET /live HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(4096)}\r\n\r\n`),
      );
      expect(big.data).toBe('');
    }
  });

  it('drops a client that does not finish its request within requestTimeout, unanswered', async () => {
    const { tcp } = await start({ requestTimeoutMs: 300 });
    const t0 = performance.now();
    // A drip-feed: the request line, then nothing.
    const slow = await raw(tcp, (s) => s.write('GET /live HTTP/1.1\r\nHost: x\r\n'));
    expect(slow.data).toBe('');
    console.log(`drip-fed connection closed after ${Math.round(performance.now() - t0)} ms (timeout 300 ms)`);
  });

  it('fails to start when the TCP port is taken', async () => {
    const { tcp } = await start();
    const second = new HealthServer({
      tcp: { host: '127.0.0.1', port: (tcp as { port: number }).port },
      socket: { path: socketPath(), required: true },
      token: null,
      requestTimeoutMs: 2000,
      maxHeaderBytes: 1024,
      phase: () => 'running',
      ready: () => Promise.resolve(READY),
      tasks: null,
      logger: silentLogger,
    });
    await expect(second.start()).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(second.socketPath).toBeNull();
  });

  it('replaces a stale socket file, refuses a live one when required, and warns otherwise', async () => {
    const stale = socketPath();
    const holder = createNetServer();
    await new Promise<void>((r) => holder.listen(stale, r));
    // A socket left behind by a process that died: the file stays, nobody answers.
    const deadPath = socketPath();
    const child = spawn(
      process.execPath,
      ['-e', `require('net').createServer().listen(${JSON.stringify(deadPath)}, () => console.log('up'))`],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((r) => child.stdout.once('data', () => r()));
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGKILL');
    await exited;
    expect(statSync(deadPath).isSocket()).toBe(true);

    const { socket } = await start({ tcp: null, socket: { path: deadPath, required: true } });
    expect(await probe(socket, '/live')).toMatchObject({ status: 200 });

    const strict = new HealthServer({
      tcp: null,
      socket: { path: stale, required: true },
      token: null,
      requestTimeoutMs: 2000,
      maxHeaderBytes: 1024,
      phase: () => 'running',
      ready: () => Promise.resolve(READY),
      tasks: null,
      logger: silentLogger,
    });
    await expect(strict.start()).rejects.toThrow(/in use by another live process/);

    const warnings: string[] = [];
    const logger: Logger = { ...silentLogger, warn: (_o: unknown, msg?: string) => warnings.push(msg ?? '') };
    const lenient = new HealthServer({
      tcp: null,
      socket: { path: stale, required: false },
      token: null,
      requestTimeoutMs: 2000,
      maxHeaderBytes: 1024,
      phase: () => 'running',
      ready: () => Promise.resolve(READY),
      tasks: null,
      logger,
    });
    servers.push(lenient);
    await lenient.start();
    expect(lenient.socketPath).toBeNull();
    expect(warnings).toEqual(['health-socket-in-use']);
    await new Promise<void>((r) => holder.close(() => r()));
  });

  it('never deletes a path that is not a socket', async () => {
    const file = join(dir, 'not-a-socket');
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, 'keep me');
    const server = new HealthServer({
      tcp: null,
      socket: { path: file, required: false },
      token: null,
      requestTimeoutMs: 2000,
      maxHeaderBytes: 1024,
      phase: () => 'running',
      ready: () => Promise.resolve(READY),
      tasks: null,
      logger: silentLogger,
    });
    await expect(server.start()).rejects.toThrow(/is not a Unix socket/);
    expect(statSync(file).isFile()).toBe(true);
  });

  it('removes its socket file on stop', async () => {
    const { server } = await start();
    const path = server.socketPath!;
    await server.stop();
    expect(() => statSync(path)).toThrow(/ENOENT/);
  });
});
