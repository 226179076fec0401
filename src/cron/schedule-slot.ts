import type { NextSlot } from '../backend/schedule-types.js';
import { fireTimesAfter } from './next-fires.js';

/**
 * A stored schedule's first slot strictly after `now` (the backend's clock), or null when its
 * expression has none left: what the backends seed a new chain and a changed expression with.
 */
export const nextScheduleSlot: NextSlot = (now, s) =>
  fireTimesAfter({ expression: s.cronExpr, timezone: s.timezone, dstStrategy: s.dstStrategy }, now, 1)[0] ??
  null;
