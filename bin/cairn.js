#!/usr/bin/env node
// The `cairn` command: the compiled CLI in dist/ (built by `npm run build`, and by `npm pack` through the prepack script).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('cairn: the build is missing (dist/src/cli/main.js); run `npm run build` in the package first.\n');
  process.exit(1);
}
let main;
try {
  ({ main } = await import(entry.href));
} catch (error) {
  // better-sqlite3 is an optional peer dependency: the library runs without it, the CLI's store needs it.
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes("'better-sqlite3'")) {
    process.stderr.write(
      'cairn: the CLI keeps its runs in SQLite through better-sqlite3, an optional peer dependency that is not installed.\n'
        + 'Install it beside Cairn (`npm install better-sqlite3`) and allow its install script, which builds its native module\n'
        + '(`npm install-scripts approve better-sqlite3 && npm rebuild better-sqlite3`).\n',
    );
    process.exit(2);
  }
  throw error;
}
process.exitCode = await main(process.argv.slice(2));
