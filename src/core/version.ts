/** This package's version (kept equal to package.json's by a test). */
export const TASKQ_VERSION = '0.1.0';
