/**
 * The layout rules of src/ and machines/: no import circles (type-only imports
 * count: a circle of types is still a knot a reader must untie), and no source
 * file over 450 lines (a file that grows past it is split by concept).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAX_LINES = 450;

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

const FILES = [...sources(join(ROOT, 'src')), ...sources(join(ROOT, 'machines'))];
/** `import ... from './x.js'`, `export ... from './x.js'`, `import './x.js'`, over several lines too. */
const IMPORT = /^(?:import|export)\s+(?:[^'";]*?\sfrom\s+)?['"](\.{1,2}\/[^'"]+)['"]/gm;

/** The local modules each file imports, by absolute path. */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const deps = new Set<string>();
    for (const match of text.matchAll(IMPORT)) {
      let target = resolve(dirname(file), match[1]!);
      if (target.endsWith('.js')) target = `${target.slice(0, -3)}.ts`;
      if (!known.has(target) && known.has(join(target, 'index.ts'))) target = join(target, 'index.ts');
      if (known.has(target)) deps.add(target);
    }
    graph.set(file, [...deps]);
  }
  return graph;
}

/** The strongly connected components with more than one file (Tarjan), each sorted. */
export function circles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter);
    counter += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('layout', () => {
  it('the circle finder finds a circle, through type imports too', () => {
    const graph = new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]);
    expect(circles(graph)).toEqual([['a', 'b', 'c']]);
    expect(circles(new Map([['a', ['b']], ['b', []]]))).toEqual([]);
    // The import pattern reads type-only imports, re-exports and multi-line import lists.
    const text = "import type { A } from './a.js';\nexport * from './b.js';\nimport {\n  c,\n  d,\n} from '../c.js';\nimport x from 'xstate';";
    expect([...text.matchAll(IMPORT)].map((m) => m[1])).toEqual(['./a.js', './b.js', '../c.js']);
  });

  it('src/ and machines/ have no import circles', () => {
    const found = circles(importGraph(FILES)).map((c) => c.map((f) => relative(ROOT, f)));
    expect(found).toEqual([]);
  });

  it(`no source file in src/ or machines/ is over ${MAX_LINES} lines`, () => {
    const long = FILES
      .map((file) => ({ file: relative(ROOT, file), lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
      .filter((f) => f.lines > MAX_LINES);
    expect(long).toEqual([]);
  });
});
