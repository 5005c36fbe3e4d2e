#!/usr/bin/env node
// The `switchyard` command (docs/flags-as-code.md "The command"). The sources are TypeScript,
// run through tsx like the rest of this repository.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/main.ts');
process.exitCode = await main(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr, cwd: process.cwd() });
