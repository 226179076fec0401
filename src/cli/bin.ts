#!/usr/bin/env node
// Runs the CLI from source (development and this repository's tests: `tsx src/cli/bin.ts`).
// Installed packages use bin/taskq.js, which runs the compiled dist/cli/main.js.
import { runCli } from './main.js';

process.exitCode = await runCli(process.argv.slice(2));
