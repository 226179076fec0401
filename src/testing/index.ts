// `taskq/testing`: tools for users' own tests.
export { InMemoryBackend, type InMemoryBackendOptions } from '../backend/memory/in-memory-backend.js';
export { MemoryTransaction } from '../backend/memory/memory-transaction.js';
export { FakeClock } from './fake-clock.js';
