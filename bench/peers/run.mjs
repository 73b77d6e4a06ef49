/**
 * `npm run bench:peers` (from the repository root): installs this package's
 * dependencies from its lockfile when they are missing or differ from it
 * (`npm ci` here, nothing at the root), then runs index.mjs with the root's
 * tsx and the `source` condition, so Cairn is imported from this repository's
 * sources.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'));

/** The direct dependencies that are not installed at the version the lockfile names. */
function stale() {
  const lock = readJson(join(here, 'package-lock.json'));
  return Object.keys(readJson(join(here, 'package.json')).dependencies).filter((name) => {
    const installed = join(here, 'node_modules', name, 'package.json');
    return !existsSync(installed) || readJson(installed).version !== lock.packages[`node_modules/${name}`]?.version;
  });
}

function npm(args) {
  // Under `npm run`, npm_execpath is the npm that runs us: use the same one.
  const execPath = process.env.npm_execpath;
  const [command, prefix] = execPath && /\.[cm]?js$/.test(execPath) ? [process.execPath, [execPath]] : ['npm', []];
  return spawnSync(command, [...prefix, ...args], { cwd: here, stdio: 'inherit', shell: command === 'npm' && process.platform === 'win32' });
}

const tsx = join(root, 'node_modules', '.bin', process.platform === 'win32' ? 'tsx.cmd' : 'tsx');
if (!existsSync(tsx)) {
  console.error('bench:peers needs the repository\'s own dependencies (tsx): run `npm install` at the repository root first.');
  process.exit(1);
}

const missing = stale();
if (missing.length > 0) {
  console.log(`bench/peers: installing its dependencies (${missing.join(', ')} missing or out of date): npm ci in bench/peers ...`);
  const installed = npm(['ci', '--no-audit', '--no-fund']);
  if (installed.status !== 0) process.exit(installed.status ?? 1);
}

const bench = spawnSync(tsx, ['--tsconfig', join(here, 'tsconfig.json'), '--conditions=source', join(here, 'index.mjs')], {
  cwd: root,
  stdio: 'inherit',
  shell: process.platform === 'win32',
});
process.exit(bench.status ?? 1);
