// Run by `npm pack` (the prepack script), after the build: puts a copy of
// msgpackr into dist/node_modules, where Node finds it from dist/src/stores/codec.js.
//
// Why a copy and not a dependency: msgpackr lists msgpackr-extract, a native
// addon with an install script, as an optional dependency, so every project
// that installed Cairn got an install-script warning for a package Cairn never
// needs (msgpackr runs in plain JavaScript without it). An `overrides` entry
// cannot help, since npm reads overrides only from the project being
// installed, and bundleDependencies packs msgpackr's installed optional
// dependencies with it. The copy carries no optional dependencies, so the
// installing project has nothing to fetch or review. In this repository,
// msgpackr stays a normal (dev) dependency and the sources resolve it there.
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const from = `${root}node_modules/msgpackr`;
const to = `${root}dist/node_modules/msgpackr`;

if (!existsSync(`${root}dist/src/stores/codec.js`)) {
  throw new Error('pack-msgpackr: dist/ is not built; run `npm run build` first.');
}
rmSync(to, { recursive: true, force: true });
// The package as published, less its benchmark notes and build config.
cpSync(from, to, { recursive: true, filter: (path) => !/(benchmark\.md|rollup\.config\.js|test-worker\.js)$/.test(path) });

const manifest = JSON.parse(readFileSync(`${to}/package.json`, 'utf8'));
for (const field of ['optionalDependencies', 'devDependencies', 'scripts']) delete manifest[field];
writeFileSync(`${to}/package.json`, `${JSON.stringify(manifest, null, 2)}\n`);
console.log(`pack-msgpackr: msgpackr ${manifest.version} copied into dist/node_modules (no optional dependencies)`);
