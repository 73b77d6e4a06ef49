/**
 * The docs cannot drift from what runs:
 *
 * - every `docs/examples/<name>.ts` is a program that imports only public
 *   subpaths (and Node's `node:` modules); it runs through tsx with the `source` condition and its stdout
 *   must equal `docs/examples/<name>.out` byte for byte;
 * - a fenced block in `docs/*.md` that follows `<!-- example: <name> -->` must
 *   be byte-identical to `docs/examples/<name>.ts`, and every example must be
 *   shown by some page; a block that follows `<!-- output: <name> -->` must be
 *   byte-identical to `docs/examples/<name>.out`;
 * - any other `ts` block in `docs/*.md` (a page written around vitest's
 *   `expect`, such as docs/testing.md) is run as well and must exit cleanly.
 *
 * The programs run a few at a time (each tsx start costs about half a second
 * of CPU), each under its own timeout.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExampleWire, type ExampleWire } from '../sdk/support/example-wire.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const docsDir = join(root, 'docs');
const examplesDir = join(docsDir, 'examples');

const PUBLIC_SUBPATHS = [
  'cairn/agent', 'cairn/testing', 'cairn/machines', 'cairn/headless', 'cairn/ops/sqlite', 'cairn/ops/postgres', 'cairn/ops/redis',
  'cairn/models', 'cairn/openai', 'cairn/anthropic', 'cairn/google', 'cairn/openai-compatible', 'cairn/embed', 'cairn/stores', 'cairn/ui', 'cairn/react',
  'cairn/policy', 'cairn/worker', 'cairn/memory', 'cairn/memory/versioned', 'cairn/memory/versioned/sqlite', 'cairn/memory/versioned/postgres', 'cairn/chat', 'cairn/sessions', 'cairn/sessions/sqlite', 'cairn/sessions/postgres', 'cairn/evidence', 'cairn/context', 'cairn/swarm', 'cairn/swarm/sqlite', 'cairn/swarm/postgres', 'cairn',
];
/**
 * The AI SDK provider the AI SDK example is about, XState, which a host that embeds a run writes its machine with,
 * and the OpenTelemetry API and SDK the tracing example registers.
 */
const THIRD_PARTY = ['@ai-sdk/openai', 'xstate', '@opentelemetry/api', '@opentelemetry/sdk-trace-base', 'zod'];
/**
 * Examples that end with a non-zero `process.exitCode` on purpose (the spec's
 * doctor example exits 8, as a shell script would see it).
 */
const EXPECTED_EXIT: Record<string, number> = { 'doctor-spec': 8 };
/**
 * The variables providers read keys from. Programs run without them, so an
 * example that reads process.env prints the same on every machine and no
 * example can reach a real provider with a real key.
 */
const PROVIDER_KEY_VARS = ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY', 'GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GENERATIVE_AI_API_KEY'];
/** Seed 004's examples talk to a local Responses server (test/sdk/support/example-wire.ts): their env points OPENAI_BASE_URL at it. */
let wire: ExampleWire | undefined;
const programEnv = (example?: string): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const name of PROVIDER_KEY_VARS) delete env[name];
  return { ...env, ...(example ? wire?.env(example) : undefined) };
};
const MARKER = /^<!-- (example|output): ([a-z0-9-]+) -->$/;
const FENCE = /^```(\S*)\s*$/;

interface Block {
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  /** The example whose source (`example`) or output (`output`) this block shows, from the marker on the line before it. */
  marker: { kind: 'example' | 'output'; name: string } | null;
  /** The lines between the fences, each followed by a newline. */
  body: string;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const read = (path: string) => readFileSync(path, 'utf8');
const pages = readdirSync(docsDir).filter((f) => f.endsWith('.md')).sort();
const exampleFiles = readdirSync(examplesDir).sort();
const examples = exampleFiles.filter((f) => f.endsWith('.ts')).map((f) => f.slice(0, -'.ts'.length));

/** Fenced blocks of a page, with the marker (if any) on the line right above each. */
function blocksOf(page: string): { blocks: Block[]; strayMarkers: number[] } {
  const lines = read(join(docsDir, page)).split('\n');
  const blocks: Block[] = [];
  const strayMarkers: number[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (MARKER.test(lines[i]!) && !FENCE.test(lines[i + 1] ?? '')) strayMarkers.push(i + 1);
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith('```'));
    if (end === -1) throw new Error(`${page}:${i + 1}: the fence is never closed`);
    const body = lines.slice(i + 1, end).map((l) => `${l}\n`).join('');
    const above = MARKER.exec(lines[i - 1] ?? '');
    const marker = above ? { kind: above[1] as 'example' | 'output', name: above[2]! } : null;
    blocks.push({ page, line: i + 1, lang: open[1]!, marker, body });
    i = end;
  }
  return { blocks, strayMarkers };
}

const parsed = pages.map(blocksOf);
const blocks = parsed.flatMap((p) => p.blocks);
const shown = blocks.filter((b) => b.marker?.kind === 'example');
const outputs = blocks.filter((b) => b.marker?.kind === 'output');
/** Unmarked TypeScript blocks: snippets that run on their own. */
const snippets = blocks.filter((b) => b.marker === null && (b.lang === 'ts' || b.lang === 'typescript'));

/**
 * `npx tsx --conditions=source <file>`, minus npm's own start-up (about a
 * second of CPU per program): node runs the tsx binary npx would resolve.
 */
const tsxBin = (() => {
  const manifest = JSON.parse(read(join(root, 'node_modules', 'tsx', 'package.json'))) as { bin: string | Record<string, string> };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin['tsx']!;
  return join(root, 'node_modules', 'tsx', bin);
})();

function run(file: string, example?: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [tsxBin, '--conditions=source', file],
      { cwd: root, timeout: 60_000, maxBuffer: 10 * 1024 * 1024, env: programEnv(example) },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/**
 * A snippet lives outside the package, so its public imports are pointed at
 * the files the package's `source` condition names; `expect` comes from vitest.
 */
function snippetProgram(body: string): string {
  const exports = JSON.parse(read(join(root, 'package.json'))).exports as Record<string, { source?: string }>;
  let program = body;
  for (const subpath of PUBLIC_SUBPATHS) {
    const source = exports[subpath === 'cairn' ? '.' : `./${subpath.slice('cairn/'.length)}`]?.source;
    if (!source) throw new Error(`package.json has no source condition for ${subpath}`);
    const url = pathToFileURL(join(root, source)).href;
    program = program.replaceAll(`'${subpath}'`, `'${url}'`).replaceAll(`"${subpath}"`, `"${url}"`);
  }
  if (/\bexpect\(/.test(program) && !/import\s*{[^}]*\bexpect\b[^}]*}\s*from/.test(program)) {
    const vitest = pathToFileURL(join(root, 'node_modules', 'vitest', 'dist', 'index.js')).href;
    program = `import { expect } from '${vitest}';\n${program}`;
  }
  return program;
}

const runs = new Map<string, Run>();
let snippetDir = '';

/**
 * A few programs at a time (twice the cores): started all at once, fifty
 * programs sharing two cores with the rest of the suite could each take longer
 * than their own timeout, which is meant for a program that hangs.
 */
async function runAll(jobs: (() => Promise<void>)[]): Promise<void> {
  const queue = [...jobs];
  const worker = async () => {
    for (let job = queue.shift(); job; job = queue.shift()) await job();
  };
  await Promise.all(Array.from({ length: Math.max(2, 2 * availableParallelism()) }, worker));
}

beforeAll(async () => {
  snippetDir = mkdtempSync(join(tmpdir(), 'cairn-doc-snippets-'));
  wire = await startExampleWire();
  const jobs: (() => Promise<void>)[] = examples.map((name) => async () => {
    runs.set(`example:${name}`, await run(join('docs', 'examples', `${name}.ts`), name));
  });
  snippets.forEach((snippet, index) => {
    // .mts: an ES module wherever it lives, so top-level await works.
    const file = join(snippetDir, `snippet-${index}.mts`);
    writeFileSync(file, snippetProgram(snippet.body));
    jobs.push(async () => void runs.set(`snippet:${index}`, await run(file)));
  });
  await runAll(jobs);
}, 300_000);

afterAll(async () => {
  await wire?.close();
  if (snippetDir) rmSync(snippetDir, { recursive: true, force: true });
});

describe('docs/examples', () => {
  it('has at least one example, each with its expected output and nothing else', () => {
    expect(examples.length).toBeGreaterThan(0);
    const expected = examples.flatMap((name) => [`${name}.out`, `${name}.ts`]).sort();
    expect(exampleFiles).toEqual(expected);
  });

  it.each(examples)('%s imports only public subpaths', (name) => {
    const source = read(join(examplesDir, `${name}.ts`));
    const specifiers = [...source.matchAll(/\bfrom\s+['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)]
      .map((m) => m[1] ?? m[2]!);
    expect(specifiers.length).toBeGreaterThan(0);
    // Node's own modules are fine (an example may make a temp directory); packages other than cairn are not,
    // except THIRD_PARTY: the AI SDK provider package (a dev dependency here, yours in your project) and xstate.
    for (const specifier of specifiers.filter((s) => !s.startsWith('node:'))) expect([...PUBLIC_SUBPATHS, ...THIRD_PARTY]).toContain(specifier);
  });

  it.each(examples)('%s prints exactly its .out', (name) => {
    const result = runs.get(`example:${name}`)!;
    expect(result.stderr, `stderr of ${name}`).toBe('');
    expect(result.code, `exit code of ${name}`).toBe(EXPECTED_EXIT[name] ?? 0);
    expect(result.stdout).toBe(read(join(examplesDir, `${name}.out`)));
  });
});

describe('docs pages', () => {
  it('put every example marker right above a fenced block', () => {
    const stray = parsed.flatMap((p, i) => p.strayMarkers.map((line) => `${pages[i]}:${line}`));
    expect(stray).toEqual([]);
  });

  it.each(shown.map((b) => [`${b.page}:${b.line} (${b.marker!.name})`, b] as const))(
    '%s is byte-identical to its example file',
    (_label, block) => {
      const name = block.marker!.name;
      expect(examples, `docs/examples/${name}.ts exists`).toContain(name);
      expect(block.lang).toBe('ts');
      expect(block.body).toBe(read(join(examplesDir, `${name}.ts`)));
    },
  );

  it.each(outputs.map((b) => [`${b.page}:${b.line} (${b.marker!.name})`, b] as const))(
    '%s is byte-identical to its expected output',
    (_label, block) => {
      const name = block.marker!.name;
      expect(examples, `docs/examples/${name}.ts exists`).toContain(name);
      expect(block.body).toBe(read(join(examplesDir, `${name}.out`)));
    },
  );

  it('show every example somewhere', () => {
    const unshown = examples.filter((name) => !shown.some((b) => b.marker!.name === name));
    expect(unshown).toEqual([]);
  });

  it.each(snippets.map((b, i) => [`${b.page}:${b.line}`, i] as const))(
    'the TypeScript block at %s runs cleanly',
    (_label, index) => {
      const result = runs.get(`snippet:${index}`)!;
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
    },
  );
});
