#!/usr/bin/env node
// The `cairn` command: the compiled CLI in dist/ (built by `npm install` through the prepare script, or `npm run build`).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('cairn: the build is missing (dist/src/cli/main.js); run `npm run build` in the package first.\n');
  process.exit(1);
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2));
