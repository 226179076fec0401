#!/usr/bin/env node
// Entry point of the `taskq` command. The compiled CLI lives in dist/ (npm run build).
import { runCli } from '../dist/cli/main.js';

process.exitCode = await runCli(process.argv.slice(2));
