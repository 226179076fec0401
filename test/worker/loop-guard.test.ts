/**
 * UnexpectedLoopErrorGuard through the real LoopService loop (1 ms interval): five unexpected
 * errors in a row stop the worker, a successful pass resets the streak, transient Postgres errors
 * are logged and neither count nor reset. No database: the passes follow a script.
 */
import { afterEach, describe, expect, it } from 'vitest';

import type { Logger } from '../../src/obs/logger.js';
import { LoopService, MAX_CONSECUTIVE_UNEXPECTED_ERRORS } from '../../src/worker/loop-service.js';
import { waitFor } from '../helpers/wait.js';

type Step = 'ok' | 'bug' | 'transient';

interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  obj: Record<string, unknown>;
}

/** A logger that keeps every line, so tests can look at what the loop reported. */
function recordingLogger(lines: LogLine[]): Logger {
  const at =
    (level: LogLine['level']) =>
    (obj: object, msg?: string): void => {
      lines.push({ level, msg: msg ?? '', obj: obj as Record<string, unknown> });
    };
  const logger: Logger = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: () => logger,
  };
  return logger;
}

/**
 * A loop whose passes follow `script`; once the script is used up every pass succeeds. `passes`
 * counts the passes run, so a test can wait for the script to be played out.
 */
class ScriptedLoop extends LoopService {
  passes = 0;

  constructor(
    private readonly script: readonly Step[],
    logger: Logger,
  ) {
    super('scripted', logger);
  }

  protected intervalMs(): number {
    return 1;
  }

  async runOnce(): Promise<void> {
    const step = this.script[this.passes] ?? 'ok';
    this.passes++;
    if (step === 'bug') throw new TypeError(`bug in pass ${this.passes}`);
    if (step === 'transient')
      throw Object.assign(new Error('terminating connection due to administrator command'), {
        code: '57P01',
      });
  }

  /** The guard's current streak (the guard is protected on LoopService). */
  get streak(): number {
    return this.guard?.consecutive ?? 0;
  }
}

const running: ScriptedLoop[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((l) => l.stop()));
});

/** What the worker's onFatal does (stop the worker), recording at which pass it fired. */
function start(script: readonly Step[]): {
  loop: ScriptedLoop;
  lines: LogLine[];
  fatal: { pass: number; reason: string }[];
} {
  const lines: LogLine[] = [];
  const fatal: { pass: number; reason: string }[] = [];
  const loop: ScriptedLoop = new ScriptedLoop(script, recordingLogger(lines)).guardWith((reason) => {
    fatal.push({ pass: loop.passes, reason });
    void loop.stop();
  });
  running.push(loop);
  loop.start();
  return { loop, lines, fatal };
}

const bugs = (n: number): Step[] => Array<Step>(n).fill('bug');

describe('UnexpectedLoopErrorGuard in a LoopService', () => {
  it('stops the worker at exactly the fifth unexpected error in a row', async () => {
    expect(MAX_CONSECUTIVE_UNEXPECTED_ERRORS).toBe(5);
    const { loop, lines, fatal } = start(bugs(10));
    await waitFor(() => fatal.length > 0 && !loop.running, 10_000, 'the fatal path');
    // onFatal stopped the loop synchronously: no sixth pass ran, and fatal fired once.
    expect(fatal).toEqual([{ pass: 5, reason: 'scripted: 5 unexpected errors in a row' }]);
    expect(loop.passes).toBe(5);
    const errors = lines.filter((l) => l.msg === 'loop-unexpected-error');
    expect(errors.map((l) => [l.level, l.obj.consecutive, l.obj.max, l.obj.loop])).toEqual([
      ['error', 1, 5, 'scripted'],
      ['error', 2, 5, 'scripted'],
      ['error', 3, 5, 'scripted'],
      ['error', 4, 5, 'scripted'],
      ['error', 5, 5, 'scripted'],
    ]);
    expect(errors.every((l) => l.obj.err instanceof TypeError)).toBe(true);
  });

  it('a successful pass in between resets the streak', async () => {
    const script: Step[] = [...bugs(4), 'ok', ...bugs(4), 'ok', ...bugs(4), 'ok'];
    const { loop, fatal } = start(script);
    await waitFor(() => loop.passes > script.length, 10_000, 'the script to play out');
    expect(fatal).toEqual([]);
    expect(loop.streak).toBe(0);
    expect(loop.running).toBe(true);
  });

  it('after a reset it takes five new errors in a row, not one', async () => {
    const { fatal } = start([...bugs(4), 'ok', ...bugs(5)]);
    await waitFor(() => fatal.length > 0, 10_000, 'the fatal path');
    expect(fatal.map((f) => f.pass)).toEqual([10]);
  });

  it('transient errors are logged as warnings and neither count nor reset the streak', async () => {
    // Four bugs, a run of transient errors, then one more bug: that one is the fifth in a row.
    const { loop, lines, fatal } = start([...bugs(4), ...Array<Step>(8).fill('transient'), 'bug']);
    await waitFor(() => fatal.length > 0, 10_000, 'the fatal path');
    expect(fatal.map((f) => f.pass)).toEqual([13]);
    const transient = lines.filter((l) => l.msg === 'loop-transient-error');
    expect(transient).toHaveLength(8);
    expect(transient.every((l) => l.level === 'warn' && l.obj.loop === 'scripted')).toBe(true);
    expect(lines.filter((l) => l.msg === 'loop-unexpected-error').map((l) => l.obj.consecutive)).toEqual([
      1, 2, 3, 4, 5,
    ]);
    expect(loop.running).toBe(false);
  });

  it('transient errors alone never stop the worker', async () => {
    const script = Array<Step>(20).fill('transient');
    const { loop, fatal } = start(script);
    await waitFor(() => loop.passes > script.length, 10_000, 'the script to play out');
    expect(fatal).toEqual([]);
    expect(loop.streak).toBe(0);
  });
});
