/**
 * loadProjectInstructions against real directory trees in a temp folder:
 * discovery from the repository root down, precedence, dedup, links that stay
 * inside the root, the byte cap and its truncation line, the message's role,
 * and the errors that make it reject.
 */
import { execFileSync } from 'node:child_process';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadProjectInstructions } from 'cairn/headless';

// readFile is wrapped so one test can make it fail with an I/O error (the tests run as root, so EACCES cannot be staged).
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  return { ...actual, readFile: vi.fn(actual.readFile) };
});

const { mkdir, mkdtemp, rm, symlink, writeFile } = fsp;

type Entry = string | { link: string } | { dir: true } | { bytes: Uint8Array };

const made: string[] = [];

/** A fresh temp folder holding `entries` (paths with `/`; a link target is relative to the temp folder). */
async function tree(entries: Record<string, Entry>): Promise<string> {
  const base = await mkdtemp(path.join(tmpdir(), 'cairn-instructions-'));
  made.push(base);
  for (const [relative, entry] of Object.entries(entries)) {
    const target = path.join(base, ...relative.split('/'));
    await mkdir(path.dirname(target), { recursive: true });
    if (typeof entry === 'string') await writeFile(target, entry);
    else if ('link' in entry) await symlink(path.join(base, ...entry.link.split('/')), target);
    else if ('dir' in entry) await mkdir(target, { recursive: true });
    else await writeFile(target, entry.bytes);
  }
  return base;
}

const at = (base: string, relative: string) => path.join(base, ...relative.split('/'));
const paths = (result: { files: Array<{ relativePath: string }> }) => result.files.map((file) => file.relativePath);
const skips = (result: { skipped: Array<{ relativePath: string; reason: string }> }) =>
  result.skipped.map(({ relativePath, reason }) => [relativePath, reason]);

afterEach(async () => {
  await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('discovery', () => {
  it('reads from the git root down to dir, outer files first (the spec example)', async () => {
    const base = await tree({
      'repo/.git/HEAD': 'ref: refs/heads/main\n',
      'repo/AGENTS.md': 'Use pnpm.\n',
      'repo/packages/app/CLAUDE.md': 'Run the app tests with `pnpm test:app`.\n',
      'repo/packages/app/src/index.ts': 'export {};\n',
    });
    const project = await loadProjectInstructions(at(base, 'repo/packages/app'));
    expect(project.root).toBe(at(base, 'repo'));
    expect(paths(project)).toEqual(['AGENTS.md', 'packages/app/CLAUDE.md']);
    expect(project.files[1]!.path).toBe(at(base, 'repo/packages/app/CLAUDE.md'));
    expect(project.message?.role).toBe('system');
    const content = project.message!.content;
    expect(content.indexOf('Use pnpm.')).toBeLessThan(content.indexOf('pnpm test:app'));
    expect(content).toContain('<project_instructions path="packages/app/CLAUDE.md">');
    // The preamble tells the model that the later file wins.
    expect(content.slice(0, content.indexOf('<project_instructions'))).toMatch(/disagree, follow the one that comes later/);
    expect(project.skipped).toEqual([]);
  });

  it('reads every directory on the way, AGENTS.md before CLAUDE.md in each', async () => {
    const base = await tree({
      '.git/HEAD': 'x',
      'CLAUDE.md': 'root claude',
      'AGENTS.md': 'root agents',
      'a/AGENTS.md': 'a agents',
      'a/b/CLAUDE.md': 'b claude',
      'a/b/AGENTS.md': 'b agents',
    });
    const project = await loadProjectInstructions(at(base, 'a/b'));
    expect(paths(project)).toEqual(['AGENTS.md', 'CLAUDE.md', 'a/AGENTS.md', 'a/b/AGENTS.md', 'a/b/CLAUDE.md']);
    const content = project.message!.content;
    const positions = ['root agents', 'root claude', 'a agents', 'b agents', 'b claude'].map((text) => content.indexOf(text));
    expect(positions.every((position) => position > 0)).toBe(true);
    expect([...positions].sort((x, y) => x - y)).toEqual(positions);
  });

  it('fileNames replaces the list and its order', async () => {
    const base = await tree({
      '.git/HEAD': 'x',
      'AGENTS.md': 'AGENTS TEXT',
      'CLAUDE.md': 'CLAUDE TEXT',
      'GEMINI.md': 'GEMINI TEXT',
    });
    const project = await loadProjectInstructions(base, { fileNames: ['GEMINI.md', 'CLAUDE.md'] });
    expect(paths(project)).toEqual(['GEMINI.md', 'CLAUDE.md']);
    expect(project.message!.content).not.toContain('AGENTS TEXT');
    expect(project.message!.content.indexOf('GEMINI TEXT')).toBeLessThan(project.message!.content.indexOf('CLAUDE TEXT'));
  });

  it('a .git file (a worktree) marks the root too', async () => {
    const base = await tree({
      'AGENTS.md': 'above the worktree',
      'wt/.git': 'gitdir: /somewhere/.git/worktrees/wt\n',
      'wt/AGENTS.md': 'worktree rules',
      'wt/pkg/CLAUDE.md': 'pkg rules',
    });
    const project = await loadProjectInstructions(at(base, 'wt/pkg'));
    expect(project.root).toBe(at(base, 'wt'));
    expect(paths(project)).toEqual(['AGENTS.md', 'pkg/CLAUDE.md']);
    expect(project.message!.content).not.toContain('above the worktree');
  });

  it('outside a repository only dir itself is read', async () => {
    const base = await tree({
      'AGENTS.md': 'parent rules',
      'work/AGENTS.md': 'work rules',
    });
    const project = await loadProjectInstructions(at(base, 'work'));
    expect(project.root).toBe(at(base, 'work'));
    expect(paths(project)).toEqual(['AGENTS.md']);
    expect(project.message!.content).toContain('work rules');
    expect(project.message!.content).not.toContain('parent rules');
  });

  it('accepts a relative dir', async () => {
    const base = await tree({ '.git/HEAD': 'x', 'AGENTS.md': 'rules', 'pkg/CLAUDE.md': 'pkg' });
    const project = await loadProjectInstructions(path.relative(process.cwd(), at(base, 'pkg')));
    expect(project.root).toBe(base);
    expect(paths(project)).toEqual(['AGENTS.md', 'pkg/CLAUDE.md']);
  });

  it('root sets the top of the search, with or without .git', async () => {
    const base = await tree({
      '.git/HEAD': 'x',
      'AGENTS.md': 'repo rules',
      'mono/AGENTS.md': 'mono rules',
      'mono/app/CLAUDE.md': 'app rules',
    });
    const project = await loadProjectInstructions(at(base, 'mono/app'), { root: at(base, 'mono') });
    expect(project.root).toBe(at(base, 'mono'));
    expect(paths(project)).toEqual(['AGENTS.md', 'app/CLAUDE.md']);
    expect(project.message!.content).not.toContain('repo rules');
    const itself = await loadProjectInstructions(at(base, 'mono/app'), { root: at(base, 'mono/app') });
    expect(paths(itself)).toEqual(['CLAUDE.md']);
  });

  it('a root that is not dir or an ancestor rejects with a TypeError', async () => {
    const base = await tree({ '.git/HEAD': 'x', 'a/AGENTS.md': 'a', 'b/AGENTS.md': 'b' });
    await expect(loadProjectInstructions(at(base, 'a'), { root: at(base, 'b') })).rejects.toThrow(TypeError);
    await expect(loadProjectInstructions(base, { root: at(base, 'a') })).rejects.toThrow(/ancestors/);
  });

  it('a dir that does not exist rejects with a TypeError instead of reading its ancestors', async () => {
    const base = await tree({ '.git/HEAD': 'x', 'AGENTS.md': 'rules', 'packages/app/x.ts': '' });
    const error = await loadProjectInstructions(at(base, 'packages/ap')).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/does not exist/);
  });

  it('a dir that is a file rejects with a TypeError', async () => {
    const base = await tree({ '.git/HEAD': 'x', 'AGENTS.md': 'rules' });
    await expect(loadProjectInstructions(at(base, 'AGENTS.md'))).rejects.toThrow(/not a directory/);
    await expect(loadProjectInstructions(at(base, 'AGENTS.md'))).rejects.toBeInstanceOf(TypeError);
  });
});

describe('what is not read', () => {
  it('files below dir are not read, and @path imports stay text', async () => {
    const base = await tree({
      '.git/HEAD': 'x',
      'AGENTS.md': 'See @docs/style.md for the style.\n',
      'docs/style.md': 'STYLE GUIDE BODY',
      'packages/app/AGENTS.md': 'nested rules',
    });
    const project = await loadProjectInstructions(base);
    expect(paths(project)).toEqual(['AGENTS.md']);
    expect(project.message!.content).toContain('See @docs/style.md for the style.');
    expect(project.message!.content).not.toContain('STYLE GUIDE BODY');
    expect(project.message!.content).not.toContain('nested rules');
  });
});

describe('duplicates', () => {
  it('a CLAUDE.md copied from AGENTS.md is loaded once', async () => {
    const text = '# Rules\n\nRun `npm test` before committing.\n';
    const base = await tree({ '.git/HEAD': 'x', 'AGENTS.md': text, 'CLAUDE.md': text.replace(/\n/g, '\r\n') });
    const project = await loadProjectInstructions(base);
    expect(paths(project)).toEqual(['AGENTS.md']);
    expect(project.skipped).toEqual([
      { relativePath: 'CLAUDE.md', path: at(base, 'CLAUDE.md'), reason: 'duplicate', detail: expect.stringContaining('AGENTS.md') },
    ]);
    expect(project.message!.content.split('npm test').length - 1).toBe(1);
  });

  it('a symlink to a file already read is loaded once, also across directories', async () => {
    const base = await tree({
      '.git/HEAD': 'x',
      'AGENTS.md': 'shared rules',
      'CLAUDE.md': { link: 'AGENTS.md' },
      'pkg/AGENTS.md': { link: 'AGENTS.md' },
    });
    const project = await loadProjectInstructions(at(base, 'pkg'));
    expect(paths(project)).toEqual(['AGENTS.md']);
    expect(skips(project)).toEqual([['CLAUDE.md', 'duplicate'], ['pkg/AGENTS.md', 'duplicate']]);
  });

  it('different texts in two files are both loaded', async () => {
    const base = await tree({ '.git/HEAD': 'x', 'AGENTS.md': 'one', 'CLAUDE.md': 'one, and two' });
    expect(paths(await loadProjectInstructions(base))).toEqual(['AGENTS.md', 'CLAUDE.md']);
  });
});

describe('links', () => {
  it('an AGENTS.md linked outside the repository is not read', async () => {
    const base = await tree({
      'home/.npmrc': '//registry.npmjs.org/:_authToken=SECRET-TOKEN',
      'repo/.git/HEAD': 'x',
      'repo/AGENTS.md': { link: 'home/.npmrc' },
      'repo/CLAUDE.md': 'real rules',
    });
    const project = await loadProjectInstructions(at(base, 'repo'));
    expect(paths(project)).toEqual(['CLAUDE.md']);
    expect(project.skipped).toEqual([{
      relativePath: 'AGENTS.md', path: at(base, 'repo/AGENTS.md'), reason: 'outside-root', detail: expect.stringContaining('outside'),
    }]);
    expect(project.message!.content).not.toContain('SECRET-TOKEN');
  });

  it('a linked directory that leads out of the repository is not read through', async () => {
    const base = await tree({
      'outside/vendor/AGENTS.md': 'OUTSIDE RULES',
      'outside/vendor/lib/CLAUDE.md': 'OUTSIDE LIB RULES',
      'repo/.git/HEAD': 'x',
      'repo/AGENTS.md': 'repo rules',
      'repo/vendor': { link: 'outside/vendor' },
    });
    const project = await loadProjectInstructions(at(base, 'repo/vendor/lib'));
    expect(project.root).toBe(at(base, 'repo'));
    expect(paths(project)).toEqual(['AGENTS.md']);
    expect(skips(project)).toEqual([['vendor/AGENTS.md', 'outside-root'], ['vendor/lib/CLAUDE.md', 'outside-root']]);
    expect(project.message!.content).not.toContain('OUTSIDE');
  });

  it('a link that stays inside the root is followed', async () => {
    const base = await tree({
      '.git/HEAD': 'x',
      'docs/agents.md': 'rules kept in docs',
      'AGENTS.md': { link: 'docs/agents.md' },
      'pkg': { dir: true },
      'alias': { link: 'pkg' },
      'pkg/CLAUDE.md': 'pkg rules',
    });
    const project = await loadProjectInstructions(at(base, 'alias'), { root: base });
    expect(paths(project)).toEqual(['AGENTS.md', 'alias/CLAUDE.md']);
    expect(project.files[0]!.path).toBe(at(base, 'AGENTS.md'));
    expect(project.message!.content).toContain('rules kept in docs');
  });

  it('a repository reached through a link is still inside its own root', async () => {
    const base = await tree({
      'real/.git/HEAD': 'x',
      'real/AGENTS.md': 'repo rules',
      'real/app/CLAUDE.md': 'app rules',
      'checkout': { link: 'real' },
    });
    const project = await loadProjectInstructions(at(base, 'checkout/app'));
    expect(project.root).toBe(at(base, 'checkout'));
    expect(paths(project)).toEqual(['AGENTS.md', 'app/CLAUDE.md']);
    expect(project.skipped).toEqual([]);
  });

  it('a dir linked from outside into a repository finds that repository, as git would', async () => {
    const base = await tree({
      'repo/.git/HEAD': 'x',
      'repo/AGENTS.md': 'repo rules',
      'repo/app/CLAUDE.md': 'app rules',
      'work/app': { link: 'repo/app' },
    });
    const project = await loadProjectInstructions(at(base, 'work/app'));
    expect(project.root).toBe(at(base, 'repo'));
    expect(paths(project)).toEqual(['AGENTS.md', 'app/CLAUDE.md']);
  });

  it('a dangling or looping link is skipped as unreadable', async () => {
    const base = await tree({
      '.git/HEAD': 'x',
      'AGENTS.md': { link: 'missing.md' },
      'CLAUDE.md': { link: 'CLAUDE.md' },
      'GEMINI.md': 'fine',
    });
    const project = await loadProjectInstructions(base, { fileNames: ['AGENTS.md', 'CLAUDE.md', 'GEMINI.md'] });
    expect(paths(project)).toEqual(['GEMINI.md']);
    expect(skips(project)).toEqual([['AGENTS.md', 'unreadable'], ['CLAUDE.md', 'unreadable']]);
  });
});

describe('size cap', () => {
  it('keeps the nearest files whole and cuts an outer one, with a truncation line', async () => {
    const base = await tree({
      '.git/HEAD': 'x',
      'AGENTS.md': 'R'.repeat(100),
      'pkg/AGENTS.md': 'P'.repeat(60),
    });
    const project = await loadProjectInstructions(at(base, 'pkg'), { maxBytes: 100 });
    expect(project.files).toEqual([
      { relativePath: 'AGENTS.md', path: at(base, 'AGENTS.md'), bytes: 100, includedBytes: 40, truncated: true, text: 'R'.repeat(40) },
      { relativePath: 'pkg/AGENTS.md', path: at(base, 'pkg/AGENTS.md'), bytes: 60, includedBytes: 60, truncated: false, text: 'P'.repeat(60) },
    ]);
    expect(project.includedBytes).toBe(100);
    const content = project.message!.content;
    expect(content).toContain(`${'R'.repeat(40)}\n[truncated: 60 more bytes not loaded]\n</project_instructions>`);
    expect(content).not.toContain('R'.repeat(41));
    expect(content.match(/\[truncated:/g)).toHaveLength(1);
  });

  it('leaves out a file of which nothing fits, and every file further out', async () => {
    const base = await tree({
      '.git/HEAD': 'x',
      'AGENTS.md': 'tiny',
      'a/AGENTS.md': 'A'.repeat(50),
      'a/b/AGENTS.md': 'B'.repeat(80),
    });
    const project = await loadProjectInstructions(at(base, 'a/b'), { maxBytes: 80 });
    expect(paths(project)).toEqual(['a/b/AGENTS.md']);
    expect(skips(project)).toEqual([['AGENTS.md', 'over-cap'], ['a/AGENTS.md', 'over-cap']]);
    expect(project.includedBytes).toBe(80);
    expect(project.message!.content).not.toContain('truncated');
  });

  it('once a file is cut or left out, no file further out is loaded, even one that would fit', async () => {
    // 3 bytes are left after the nearest file: too few for one '🙂' (4 bytes), enough for the root's 'x'.
    const base = await tree({
      '.git/HEAD': 'x',
      'AGENTS.md': 'x',
      'a/AGENTS.md': '🙂'.repeat(5),
      'a/b/AGENTS.md': 'B'.repeat(40),
    });
    const project = await loadProjectInstructions(at(base, 'a/b'), { maxBytes: 43 });
    expect(paths(project)).toEqual(['a/b/AGENTS.md']);
    expect(skips(project)).toEqual([['AGENTS.md', 'over-cap'], ['a/AGENTS.md', 'over-cap']]);
    expect(project.includedBytes).toBe(40);

    const wider = await loadProjectInstructions(at(base, 'a/b'), { maxBytes: 60 });
    expect(wider.files.map((file) => [file.relativePath, file.includedBytes, file.truncated])).toEqual([
      ['a/AGENTS.md', 20, false],
      ['a/b/AGENTS.md', 40, false],
    ]);
    expect(skips(wider)).toEqual([['AGENTS.md', 'over-cap']]);
  });

  it('cuts at a character boundary, never inside a multi-byte character', async () => {
    // 'é' is 2 bytes and '🙂' 4 in UTF-8: a 10-byte budget over 'aé🙂🙂' (11 bytes) keeps 'aé🙂' (7 bytes).
    const base = await tree({ '.git/HEAD': 'x', 'AGENTS.md': 'aé🙂🙂', 'CLAUDE.md': 'near' });
    const project = await loadProjectInstructions(base, { maxBytes: 14 });
    const outer = project.files[0]!;
    expect(outer).toMatchObject({ relativePath: 'AGENTS.md', bytes: 11, includedBytes: 7, truncated: true, text: 'aé🙂' });
    expect(project.includedBytes).toBe(11);
    expect(project.message!.content).toContain('aé🙂\n[truncated: 4 more bytes not loaded]');
    expect(project.message!.content).not.toContain('\uFFFD');
  });

  it('a budget smaller than the first character leaves the file out', async () => {
    const base = await tree({ '.git/HEAD': 'x', 'AGENTS.md': '🙂 rules', 'CLAUDE.md': 'ab' });
    const project = await loadProjectInstructions(base, { maxBytes: 5 });
    expect(paths(project)).toEqual(['CLAUDE.md']);
    expect(skips(project)).toEqual([['AGENTS.md', 'over-cap']]);
    expect(project.includedBytes).toBe(2);
  });

  it('cuts the nearest file too when it alone is over the cap', async () => {
    const base = await tree({ '.git/HEAD': 'x', 'AGENTS.md': 'outer', 'pkg/AGENTS.md': 'N'.repeat(50) });
    const project = await loadProjectInstructions(at(base, 'pkg'), { maxBytes: 30 });
    expect(project.files.map((file) => [file.relativePath, file.includedBytes, file.truncated])).toEqual([['pkg/AGENTS.md', 30, true]]);
    expect(skips(project)).toEqual([['AGENTS.md', 'over-cap']]);
  });

  it('defaults to 32768 bytes', async () => {
    const base = await tree({ '.git/HEAD': 'x', 'AGENTS.md': 'R'.repeat(40_000), 'pkg/AGENTS.md': 'P'.repeat(768) });
    const project = await loadProjectInstructions(at(base, 'pkg'));
    expect(project.includedBytes).toBe(32_768);
    expect(project.files[0]).toMatchObject({ bytes: 40_000, includedBytes: 32_000, truncated: true });
    expect(project.message!.content).toContain('[truncated: 8000 more bytes not loaded]');
  });

  it('maxBytes 0 loads nothing and gives no message', async () => {
    const base = await tree({ '.git/HEAD': 'x', 'AGENTS.md': 'rules' });
    const project = await loadProjectInstructions(base, { maxBytes: 0 });
    expect(project.files).toEqual([]);
    expect(project.includedBytes).toBe(0);
    expect(project.message).toBeUndefined();
    expect(skips(project)).toEqual([['AGENTS.md', 'over-cap']]);
  });
});

describe('the message', () => {
  it("role 'user' makes it a user message", async () => {
    const base = await tree({ '.git/HEAD': 'x', 'AGENTS.md': 'rules' });
    const project = await loadProjectInstructions(base, { role: 'user' });
    expect(project.message).toEqual({ role: 'user', content: expect.stringContaining('rules') });
  });

  it('is undefined when no file is loaded', async () => {
    const base = await tree({ '.git/HEAD': 'x', 'README.md': 'not instructions' });
    const project = await loadProjectInstructions(base);
    expect(project).toEqual({ root: base, files: [], skipped: [], includedBytes: 0 });
    expect('message' in project).toBe(false);
  });

  it('escapes a path that holds quote characters', async () => {
    const base = await tree({ '.git/HEAD': 'x', 'say "hi"/AGENTS.md': 'rules' });
    const project = await loadProjectInstructions(at(base, 'say "hi"'));
    expect(project.message!.content).toContain('<project_instructions path="say &quot;hi&quot;/AGENTS.md">');
  });
});

describe('odd files', () => {
  it('a directory or a FIFO named AGENTS.md is skipped as not-a-file', async () => {
    const base = await tree({ '.git/HEAD': 'x', 'AGENTS.md/notes.txt': 'x', 'pkg/CLAUDE.md': 'pkg rules' });
    execFileSync('mkfifo', [at(base, 'pkg/AGENTS.md')]);
    const project = await loadProjectInstructions(at(base, 'pkg'));
    expect(paths(project)).toEqual(['pkg/CLAUDE.md']);
    expect(skips(project)).toEqual([['AGENTS.md', 'not-a-file'], ['pkg/AGENTS.md', 'not-a-file']]);
  });

  it('an empty file or one that is not UTF-8 is skipped; a byte-order mark is dropped', async () => {
    const base = await tree({
      '.git/HEAD': 'x',
      'AGENTS.md': ' \n\n',
      'CLAUDE.md': { bytes: new Uint8Array([0x52, 0x75, 0x6c, 0xe9, 0x73]) }, // 'Rulés' in Latin-1
      'pkg/AGENTS.md': { bytes: new Uint8Array([0xef, 0xbb, 0xbf, 0x6f, 0x6b]) },
    });
    const project = await loadProjectInstructions(at(base, 'pkg'));
    expect(skips(project)).toEqual([['AGENTS.md', 'empty'], ['CLAUDE.md', 'unreadable']]);
    expect(project.files).toEqual([expect.objectContaining({ relativePath: 'pkg/AGENTS.md', text: 'ok', bytes: 2 })]);
  });

  it('a read error other than not-found rejects with the file-system error', async () => {
    const base = await tree({ '.git/HEAD': 'x', 'AGENTS.md': 'rules' });
    const failure = Object.assign(new Error(`EIO: i/o error, read '${at(base, 'AGENTS.md')}'`), { code: 'EIO' });
    vi.mocked(fsp.readFile).mockRejectedValueOnce(failure);
    await expect(loadProjectInstructions(base)).rejects.toBe(failure);
    // The next call reads normally: the failure came from the staged error alone.
    expect(paths(await loadProjectInstructions(base))).toEqual(['AGENTS.md']);
  });
});

describe('options', () => {
  it.each([
    ['maxBytes negative', { maxBytes: -1 }],
    ['maxBytes fractional', { maxBytes: 1.5 }],
    ['maxBytes a string', { maxBytes: '100' }],
    ['role assistant', { role: 'assistant' }],
    ['fileNames empty', { fileNames: [] }],
    ['fileNames with a path', { fileNames: ['docs/AGENTS.md'] }],
    ['fileNames ..', { fileNames: ['..'] }],
    ['fileNames repeated', { fileNames: ['AGENTS.md', 'AGENTS.md'] }],
    ['root empty', { root: '' }],
    ['an unknown option', { maxbytes: 10 }],
  ])('%s rejects with a TypeError before reading', async (_label, options) => {
    const base = await tree({ '.git/HEAD': 'x', 'AGENTS.md': 'rules' });
    const error = await loadProjectInstructions(base, options as never).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/^loadProjectInstructions: /);
  });

  it('maxBytes Infinity loads everything', async () => {
    const base = await tree({ '.git/HEAD': 'x', 'AGENTS.md': 'R'.repeat(40_000) });
    const project = await loadProjectInstructions(base, { maxBytes: Infinity });
    expect(project.files[0]).toMatchObject({ bytes: 40_000, includedBytes: 40_000, truncated: false });
  });
});
