/**
 * `cairn/ui` is what a page imports for agentStateFromParts: bundled for the
 * browser, it must pull in nothing of Node's.
 */
import { describe, expect, it } from 'vitest';
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

const entry = fileURLToPath(new URL('../../src/ui/index.ts', import.meta.url));
const reactEntry = fileURLToPath(new URL('../../src/react/index.ts', import.meta.url));

describe('cairn/ui in a browser', () => {
  it('bundles for the browser with no Node module in its graph', async () => {
    const result = await build({
      entryPoints: [entry], bundle: true, write: false, platform: 'browser', format: 'esm', metafile: true, logLevel: 'silent',
    });
    const inputs = Object.keys(result.metafile!.inputs);
    expect(inputs.some((path) => path.includes('src/ui/reducer.ts'))).toBe(true);
    const imports = Object.values(result.metafile!.inputs).flatMap((input) => input.imports.map((i) => i.path));
    expect(imports.filter((path) => path.startsWith('node:') || /^(fs|path|os|crypto|async_hooks|stream|util|events)$/.test(path))).toEqual([]);
    // Only the wire and what it reads of the engine's types and helpers: no engine, store or XState.
    expect(inputs.filter((path) => /node_modules|src\/(runtime|stores|machines)\//.test(path))).toEqual([]);
  });

  it('cairn/react bundles for the browser too, React left to the page', async () => {
    const result = await build({
      entryPoints: [reactEntry], bundle: true, write: false, platform: 'browser', format: 'esm', metafile: true, logLevel: 'silent', external: ['react'],
    });
    const imports = Object.values(result.metafile!.inputs).flatMap((input) => input.imports.map((i) => i.path));
    expect(imports.filter((path) => path.startsWith('node:'))).toEqual([]);
    expect(Object.keys(result.metafile!.inputs).filter((path) => /src\/(runtime|stores|machines)\//.test(path))).toEqual([]);
  });
});
