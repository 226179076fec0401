#!/usr/bin/env node
// Entry point of the `taskq` command. The compiled CLI lives in dist/ (npm run build).
import { runCli } from '../dist/cli/main.js';

// Exit explicitly: a handler orphaned at worker shutdown (it ignored its abort signal) may still
// hold timers or sockets, and the process must not wait for it.
process.exit(await runCli(process.argv.slice(2)));
