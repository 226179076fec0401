#!/usr/bin/env node
// Runs the CLI from source (development and this repository's tests: `tsx src/cli/bin.ts`).
// Installed packages use bin/taskq.js, which runs the compiled dist/cli/main.js.
import { runCli } from './main.js';

// Exit explicitly: a handler orphaned at worker shutdown (it ignored its abort signal) may still
// hold timers or sockets, and the process must not wait for it.
process.exit(await runCli(process.argv.slice(2)));
