export { DST_STRATEGIES, type DstStrategy } from './dst-strategy.js';
export { checkCronSpec, type CronSpec } from './cron-spec.js';
export { nextFireTimes, nextFireAfter, type CronSpecInput } from './next-fires.js';
