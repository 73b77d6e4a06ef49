/**
 * Project instructions: the AGENTS.md / CLAUDE.md files a repository keeps for
 * coding agents, read from the repository root down to a working directory and
 * joined into one message.
 */
import { lstat, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { CairnTypeError } from '../errors/index.js';
import type {
  ProjectInstructionFile, ProjectInstructions, ProjectInstructionsOptions, SkippedInstructionFile, SkippedInstructionReason,
} from './types.js';

const DEFAULT_FILE_NAMES: readonly string[] = ['AGENTS.md', 'CLAUDE.md'];
const DEFAULT_MAX_BYTES = 32_768;
const OPTION_KEYS: ReadonlySet<string> = new Set(['root', 'fileNames', 'maxBytes', 'role']);
const LABEL = 'loadProjectInstructions';

const PREAMBLE =
  'The project keeps instruction files for agents; they follow, from the repository root down to the working directory. '
  + 'Where two of them disagree, follow the one that comes later: it belongs to a directory nearer to the work.';

interface Normalized {
  root: string | undefined;
  fileNames: readonly string[];
  maxBytes: number;
  role: 'system' | 'user';
}

/** A regular file inside the root whose text is loadable; `order` is its place in the walk. */
interface Candidate {
  order: number;
  relativePath: string;
  path: string;
  text: string;
  bytes: number;
}

type Skip = SkippedInstructionFile & { order: number };

/**
 * Reads the project's instruction files (by default `AGENTS.md`, then
 * `CLAUDE.md`) in every directory from the repository root down to `dir`, and
 * joins them into one message for the model. `runHeadless({ projectDir })`
 * calls it on the first leg of a run; call it yourself to build your own
 * prompt or to see what a run would load.
 *
 * - **Root.** The nearest directory from `dir` upwards that holds a `.git`
 *   entry (a folder, or the file a worktree has). Outside a repository only
 *   `dir` is read. `options.root` sets it; it must be `dir` or an ancestor.
 * - **Order.** Outer directories first, `dir` last; within a directory, the
 *   order of `fileNames`. The message tells the model that a later file wins
 *   where two disagree.
 * - **Not read.** Files below `dir`. `@path` imports inside a file stay text.
 * - **Duplicates.** A file that is the same file as an earlier one (a
 *   symlink) or whose text repeats an earlier one's (a copy, ignoring line
 *   endings and surrounding whitespace) is loaded once, at its first place.
 * - **Links.** A symlinked file, or a file reached through a symlinked
 *   directory, is read only when its real path is inside the real path of the
 *   root; otherwise it is skipped as `outside-root`.
 * - **Size cap.** At most `maxBytes` UTF-8 bytes of file text. Files are kept
 *   whole from the nearest outwards; the first that does not fit is cut at a
 *   character boundary and ends with a `[truncated: N more bytes not loaded]`
 *   line (that line and the rest of the framing do not count toward the cap);
 *   files further out are skipped as `over-cap`.
 *
 * Files that exist and are not loaded are listed in `skipped` with a reason;
 * missing files are not listed.
 *
 * Rejects with a `TypeError` when `dir` does not exist or is not a directory
 * (so a mistyped path never loads its ancestors' files instead), when `root`
 * is not `dir` or an ancestor of it, or when an option is invalid or unknown.
 * Any other file-system error (a file it may not read, an I/O error) rejects
 * with Node's own error (`code` `EACCES`, `EIO`, ... and the `path`): a run
 * must not start without instructions it was told to load.
 *
 * @example
 * ```ts
 * import { loadProjectInstructions } from 'cairn/headless';
 *
 * const project = await loadProjectInstructions('packages/app');
 * console.log(project.files.map((file) => file.relativePath)); // ['AGENTS.md', 'packages/app/CLAUDE.md']
 * console.log(project.message?.role); // 'system'
 * ```
 */
export async function loadProjectInstructions(
  dir: string,
  options?: ProjectInstructionsOptions,
): Promise<ProjectInstructions> {
  if (typeof dir !== 'string' || dir === '') throw new CairnTypeError('invalid_options', `${LABEL}: dir must be a non-empty path.`);
  const opts = normalizeOptions(options);
  const absDir = path.resolve(dir);
  await requireDirectory(absDir);
  const { root, chain } = await findRoot(absDir, opts.root);
  const realRoot = await realpath(root);

  const candidates: Candidate[] = [];
  const skipped: Skip[] = [];
  const seenFiles = new Map<string, string>(); // real path → relative path of its first sighting
  const seenTexts = new Map<string, string>(); // normalized text → relative path of its first sighting
  let order = 0;
  for (const directory of chain) {
    for (const name of opts.fileNames) {
      const filePath = path.join(directory, name);
      const relativePath = toPosix(path.relative(root, filePath));
      const here = order++;
      const skip = (reason: SkippedInstructionReason, detail: string): void => {
        skipped.push({ order: here, relativePath, path: filePath, reason, detail });
      };

      if (!(await exists(filePath))) continue;
      const real = await resolveLink(filePath);
      if (typeof real !== 'string') {
        skip('unreadable', real.detail);
        continue;
      }
      if (!isInside(realRoot, real)) {
        skip('outside-root', `its real path ${real} is outside the root ${realRoot}`);
        continue;
      }
      if (!(await stat(real)).isFile()) {
        skip('not-a-file', 'it is not a regular file');
        continue;
      }
      const sameFile = seenFiles.get(real);
      if (sameFile !== undefined) {
        skip('duplicate', `it is the same file as ${sameFile}`);
        continue;
      }
      seenFiles.set(real, relativePath);
      // Read through the real path, so the file read is the one just checked.
      const text = decodeUtf8(await readFile(real));
      if (text === undefined) {
        skip('unreadable', 'it is not valid UTF-8 text');
        continue;
      }
      const key = text.replace(/\r\n?/g, '\n').trim();
      if (key === '') {
        skip('empty', 'it holds nothing but whitespace');
        continue;
      }
      const sameText = seenTexts.get(key);
      if (sameText !== undefined) {
        skip('duplicate', `its text repeats ${sameText}`);
        continue;
      }
      seenTexts.set(key, relativePath);
      candidates.push({ order: here, relativePath, path: filePath, text, bytes: Buffer.byteLength(text, 'utf8') });
    }
  }

  const files = applyCap(candidates, opts.maxBytes, skipped);
  skipped.sort((a, b) => a.order - b.order);
  const includedBytes = files.reduce((sum, file) => sum + file.includedBytes, 0);
  return {
    root,
    files,
    skipped: skipped.map(({ order: _order, ...rest }) => rest),
    includedBytes,
    ...(files.length > 0 ? { message: { role: opts.role, content: render(files) } } : {}),
  };
}

// ---------------------------------------------------------------- options

function normalizeOptions(options: unknown): Normalized {
  if (options === undefined) {
    return { root: undefined, fileNames: DEFAULT_FILE_NAMES, maxBytes: DEFAULT_MAX_BYTES, role: 'system' };
  }
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new CairnTypeError('invalid_options', `${LABEL}: options must be an object.`);
  }
  const given = options as Record<string, unknown>;
  const unknown = Object.keys(given).filter((key) => !OPTION_KEYS.has(key) && given[key] !== undefined);
  if (unknown.length > 0) {
    throw new CairnTypeError('invalid_options', `${LABEL}: unknown option ${unknown.join(', ')}; the options are ${[...OPTION_KEYS].join(', ')}.`);
  }

  const { root, fileNames, maxBytes, role } = given;
  if (root !== undefined && (typeof root !== 'string' || root === '')) {
    throw new CairnTypeError('invalid_options', `${LABEL}: root must be a non-empty path.`);
  }
  if (maxBytes !== undefined
    && !(typeof maxBytes === 'number' && (maxBytes === Infinity || (Number.isInteger(maxBytes) && maxBytes >= 0)))) {
    throw new CairnTypeError('invalid_options', `${LABEL}: maxBytes must be a non-negative integer or Infinity, got ${String(maxBytes)}.`);
  }
  if (role !== undefined && role !== 'system' && role !== 'user') {
    throw new CairnTypeError('invalid_options', `${LABEL}: role must be 'system' or 'user', got ${JSON.stringify(role)}.`);
  }
  return {
    root,
    fileNames: fileNames === undefined ? DEFAULT_FILE_NAMES : checkFileNames(fileNames),
    maxBytes: maxBytes ?? DEFAULT_MAX_BYTES,
    role: role ?? 'system',
  };
}

function checkFileNames(fileNames: unknown): string[] {
  if (!Array.isArray(fileNames) || fileNames.length === 0) {
    throw new CairnTypeError('invalid_options', `${LABEL}: fileNames must be a list of at least one file name.`);
  }
  const names: string[] = [];
  for (const name of fileNames as unknown[]) {
    // A name with a separator would read files from other directories than the walk's.
    if (typeof name !== 'string' || name === '' || name === '.' || name === '..' || /[/\\\0]/.test(name)) {
      throw new CairnTypeError('invalid_options', `${LABEL}: fileNames must hold plain file names (no path separators), got ${JSON.stringify(name)}.`);
    }
    if (names.includes(name)) throw new CairnTypeError('invalid_options', `${LABEL}: fileNames names ${name} twice.`);
    names.push(name);
  }
  return names;
}

// ---------------------------------------------------------------- the walk

function errorCode(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
}

async function requireDirectory(absDir: string): Promise<void> {
  let isDirectory: boolean;
  try {
    isDirectory = (await stat(absDir)).isDirectory();
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') {
      throw new CairnTypeError('invalid_options', `${LABEL}: dir ${absDir} does not exist.`, { cause: error });
    }
    throw error;
  }
  if (!isDirectory) throw new CairnTypeError('invalid_options', `${LABEL}: dir ${absDir} is not a directory.`);
}

/**
 * The root, and the directories from it down to `absDir`. The walk follows the
 * path as given (not its real path), so a directory linked from outside into the
 * walk is still seen, and its files are then refused as `outside-root`.
 */
async function findRoot(absDir: string, explicitRoot: string | undefined): Promise<{ root: string; chain: string[] }> {
  if (explicitRoot !== undefined) {
    const absRoot = path.resolve(explicitRoot);
    if (isInside(absRoot, absDir)) return { root: absRoot, chain: chainFrom(absRoot, absDir) };
    // The two may name the same place through different links (macOS /var and /private/var).
    const realDir = await realpath(absDir);
    const realRoot = await realpath(absRoot).catch(() => undefined);
    if (realRoot !== undefined && isInside(realRoot, realDir)) return { root: realRoot, chain: chainFrom(realRoot, realDir) };
    throw new CairnTypeError('invalid_options', `${LABEL}: root ${absRoot} must be dir (${absDir}) or one of its ancestors.`);
  }

  const lexical = await nearestRepository(absDir);
  if (lexical !== undefined) return { root: lexical, chain: chainFrom(lexical, absDir) };
  // A directory reached through a link may sit in a repository only its real path shows, as git sees it.
  const realDir = await realpath(absDir);
  if (realDir !== absDir) {
    const physical = await nearestRepository(realDir);
    if (physical !== undefined) return { root: physical, chain: chainFrom(physical, realDir) };
  }
  return { root: absDir, chain: [absDir] };
}

async function nearestRepository(start: string): Promise<string | undefined> {
  for (let directory = start; ; directory = path.dirname(directory)) {
    // Any entry named .git counts: a folder in a clone, a file in a worktree or a submodule.
    if (await exists(path.join(directory, '.git'), true)) return directory;
    if (path.dirname(directory) === directory) return undefined;
  }
}

function chainFrom(root: string, dir: string): string[] {
  const relative = path.relative(root, dir);
  const chain = [root];
  if (relative === '') return chain;
  let current = root;
  for (const segment of relative.split(path.sep)) {
    current = path.join(current, segment);
    chain.push(current);
  }
  return chain;
}

/** True for `child` equal to `parent` or below it. */
function isInside(parent: string, child: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative));
}

/** Whether anything goes by that path (a dangling link counts). Errors other than not-found reject, unless `quiet`. */
async function exists(filePath: string, quiet = false): Promise<boolean> {
  try {
    await lstat(filePath);
    return true;
  } catch (error) {
    const code = errorCode(error);
    if (quiet || code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw error;
  }
}

/** The real path, or why a link cannot be followed. */
async function resolveLink(filePath: string): Promise<string | { detail: string }> {
  try {
    return await realpath(filePath);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') return { detail: 'it is a symbolic link whose target does not exist' };
    if (code === 'ELOOP') return { detail: 'it is a symbolic link that loops' };
    throw error;
  }
}

function toPosix(relative: string): string {
  return relative.split(path.sep).join('/');
}

// ---------------------------------------------------------------- text

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** The text without a leading byte-order mark, or undefined when the bytes are not UTF-8. */
function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Keeps files whole from the nearest outwards; the first that does not fit is
 * cut to what is left and every file further out is skipped.
 */
function applyCap(candidates: Candidate[], maxBytes: number, skipped: Skip[]): ProjectInstructionFile[] {
  const kept: ProjectInstructionFile[] = [];
  let remaining = maxBytes;
  let full = false;
  for (let index = candidates.length - 1; index >= 0; index--) {
    const { order, relativePath, path: filePath, text, bytes } = candidates[index]!;
    if (!full && bytes <= remaining) {
      kept.push({ relativePath, path: filePath, bytes, includedBytes: bytes, truncated: false, text });
      remaining -= bytes;
      continue;
    }
    if (!full) {
      full = true;
      const cut = cutUtf8(text, remaining);
      if (cut.bytes > 0) {
        kept.push({ relativePath, path: filePath, bytes, includedBytes: cut.bytes, truncated: true, text: cut.text });
        remaining -= cut.bytes;
        continue;
      }
    }
    skipped.push({
      order, relativePath, path: filePath, reason: 'over-cap',
      detail: `none of its ${bytes} bytes fit under maxBytes (${maxBytes}) once the files nearer dir were loaded`,
    });
  }
  return kept.reverse();
}

/** The longest start of `text` of at most `maxBytes` UTF-8 bytes that does not split a character. */
function cutUtf8(text: string, maxBytes: number): { text: string; bytes: number } {
  const encoded = Buffer.from(text, 'utf8');
  let end = Math.min(maxBytes, encoded.length);
  // A byte 10xxxxxx continues the character before it: back up to the start of that character.
  while (end > 0 && end < encoded.length && (encoded[end]! & 0xc0) === 0x80) end--;
  return { text: encoded.subarray(0, end).toString('utf8'), bytes: end };
}

function render(files: ProjectInstructionFile[]): string {
  const sections = files.map((file) => {
    const body = file.text.endsWith('\n') ? file.text : `${file.text}\n`;
    const notice = file.truncated ? `[truncated: ${file.bytes - file.includedBytes} more bytes not loaded]\n` : '';
    return `<project_instructions path="${escapeAttribute(file.relativePath)}">\n${body}${notice}</project_instructions>`;
  });
  return [PREAMBLE, ...sections].join('\n\n');
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
