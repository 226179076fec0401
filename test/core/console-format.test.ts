import { describe, expect, it } from 'vitest';

import { formatConsoleLine } from '../../src/obs/console-format.js';
import { createLogger } from '../../src/obs/logger.js';

const TIME = Date.UTC(2026, 11, 5, 23, 1, 21, 345);

describe("logFormat 'console'", () => {
  it('writes time, level, event and key=value fields on one line, without pid, hostname and name', () => {
    const json = JSON.stringify({
      level: 40,
      time: TIME,
      pid: 123,
      hostname: 'box',
      name: 'taskq',
      workerId: 'w1',
      jobId: '0193aa',
      actor: 'send-email',
      attempt: 1,
      errorClass: 'TypeError',
      message: 'connect refused: "smtp" at a=b',
      retryInMs: 1000,
      done: false,
      gone: null,
      tags: ['a', 'b'],
      msg: 'job-attempt-failed',
    });
    expect(formatConsoleLine(json)).toBe(
      '2026-12-05T23:01:21.345Z WARN  job-attempt-failed workerId=w1 jobId=0193aa actor=send-email attempt=1 ' +
        'errorClass=TypeError message="connect refused: \\"smtp\\" at a=b" retryInMs=1000 done=false gone=null ' +
        'tags=["a","b"]\n',
    );
  });

  it('quotes empty strings and control characters, and puts a stack on indented lines after the line', () => {
    const out = formatConsoleLine(
      JSON.stringify({
        level: 50,
        time: TIME,
        msg: 'job-failed',
        note: '',
        tab: 'a\tb',
        stack: 'Boom: no\n    at f (x.ts:1:1)',
      }),
    );
    expect(out).toBe(
      '2026-12-05T23:01:21.345Z ERROR job-failed note="" tab="a\\tb"\n    Boom: no\n        at f (x.ts:1:1)\n',
    );
  });

  it("shortens pino's serialised err to `Type: message`, its stack below", () => {
    const out = formatConsoleLine(
      JSON.stringify({
        level: 40,
        time: TIME,
        msg: 'settle-write-failed',
        err: { type: 'Error', message: 'socket hang up', stack: 'Error: socket hang up\n    at g' },
        jobs: 3,
      }),
    );
    expect(out).toBe(
      '2026-12-05T23:01:21.345Z WARN  settle-write-failed err="Error: socket hang up" jobs=3\n' +
        '    Error: socket hang up\n        at g\n',
    );
  });

  it('passes a line that is not a JSON object through', () => {
    expect(formatConsoleLine('not json')).toBe('not json\n');
    expect(formatConsoleLine('[1,2]\n')).toBe('[1,2]\n');
  });

  it('createLogger({ format }) writes console lines, and JSON records by default', () => {
    const text: string[] = [];
    const consoleLog = createLogger({ format: 'console', destination: { write: (l) => text.push(l) } });
    consoleLog.child({ workerId: 'w1' }).warn({ jobId: 'j1', attempt: 2 }, 'job-attempt-failed');
    consoleLog.debug({}, 'below-the-level');
    expect(text).toHaveLength(1);
    expect(text[0]).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z WARN {2}job-attempt-failed workerId=w1 jobId=j1 attempt=2\n$/,
    );

    const json: string[] = [];
    createLogger({ destination: { write: (l) => json.push(l) } }).info({ a: 1 }, 'evt');
    expect(JSON.parse(json[0]!)).toMatchObject({ level: 30, name: 'taskq', msg: 'evt', a: 1 });
  });
});
