/**
 * Agent Skills for headless runs: folders `<dir>/<id>/SKILL.md`, listed to the
 * model in the system message and read through two tools. Every read stays
 * inside the skill's own folder, judged by real paths, so a symlink cannot
 * hand the model a file from elsewhere on the machine.
 */
import { CairnError, CairnTypeError } from '../errors/index.js';
import type { Dirent } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import * as nodePath from 'node:path';
import type { AgentTool, AgentTools } from '../agent/types.js';
import type {
  NodeSkillSourceOptions, SkillAccessReason, SkillSource, SkillsOption, SkillSummary, SkillToolset,
} from './types.js';

/** The names of the two skill tools. A tool of your own cannot take either while skills are in use. */
export const SKILL_TOOL_NAMES = ['load_skill', 'read_skill_resource'] as const;

const SKILL_FILE = 'SKILL.md';
const DEFAULT_MAX_RESOURCE_BYTES = 256 * 1024;
/** File-system errors that make a folder "not a skill" rather than a failure of the whole list. */
const UNUSABLE = new Set(['ENOENT', 'ENOTDIR', 'ELOOP', 'EACCES', 'EPERM', 'EISDIR']);

/**
 * A skill read that was refused: an id no source holds, or a path that is
 * absolute, leaves the skill's folder, or does not name a readable text file.
 * Inside a run the tool call ends as an error result carrying the message.
 */
export class SkillAccessError extends CairnError {
  constructor(readonly reason: SkillAccessReason, message: string, readonly skillId: string, readonly path?: string) {
    super('skill_access_denied', message, { fault: 'model' });
    this.name = 'SkillAccessError';
  }
}

// ---------------------------------------------------------------- front matter

interface ParsedSkillFile {
  /** Null when the file has no (closed) front matter block. */
  fields: Record<string, string> | null;
  body: string;
}

/**
 * Splits SKILL.md into its front matter fields and body. Only what skill files
 * use is understood: top-level `key: value` lines (plain, single- or
 * double-quoted), `|` and `>` blocks, indented continuation lines and
 * comments. Nested maps are skipped. A file without a closing `---` has no
 * front matter: all of it is the body.
 */
function parseSkillFile(text: string): ParsedSkillFile {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  if (lines[0]?.trimEnd() !== '---') return { fields: null, body: text.trim() };
  const end = lines.findIndex((line, index) => index > 0 && line.trimEnd() === '---');
  if (end < 0) return { fields: null, body: text.trim() };

  const fields: Record<string, string> = {};
  let index = 1;
  while (index < end) {
    const line = lines[index++]!;
    const match = /^([A-Za-z0-9_-]+)\s*:(?:\s+(.*))?$/.exec(line.trimEnd());
    if (!match) continue; // comments, blank lines, and lines of a nested map
    const key = match[1]!;
    const raw = (match[2] ?? '').trim();
    const continuation: string[] = [];
    while (index < end && (/^\s+\S/.test(lines[index]!) || (lines[index]!.trim() === '' && continuation.length > 0))) {
      continuation.push(lines[index++]!.trim());
    }
    while (continuation.length > 0 && continuation[continuation.length - 1] === '') continuation.pop();
    if (/^[|>][+-]?$/.test(raw)) {
      fields[key] = raw.startsWith('|') ? continuation.join('\n') : foldLines(continuation);
    } else if (raw === '') {
      // A nested map (`metadata:` with indented children) or an empty value: no text.
      if (continuation.length === 0) fields[key] = '';
    } else {
      const first = scalar(raw);
      fields[key] = continuation.length > 0 ? foldLines([first, ...continuation]) : first;
    }
  }
  return { fields, body: lines.slice(end + 1).join('\n').trim() };
}

/** Joins lines the way a folded YAML block does: a blank line is a paragraph break. */
function foldLines(lines: string[]): string {
  return lines.join('\n').replace(/([^\n])\n(?=[^\n])/g, '$1 ').replace(/\n\n/g, '\n');
}

/** One inline value: quotes removed, or a trailing ` # comment` dropped from a plain one. */
function scalar(raw: string): string {
  const quote = raw[0];
  if ((quote === '"' || quote === "'") && raw.length >= 2) {
    const close = raw.lastIndexOf(quote);
    if (close > 0) {
      const inner = raw.slice(1, close);
      if (quote === "'") return inner.replace(/''/g, "'");
      return inner.replace(/\\(["\\nt])/g, (_, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : c));
    }
  }
  return raw.replace(/\s+#.*$/, '').trim();
}

function summaryOf(id: string, fields: Record<string, string> | null): SkillSummary {
  const name = fields?.name?.trim();
  return { id, name: name ? name : id, description: fields?.description?.trim() ?? '' };
}

// ---------------------------------------------------------------- node source

/** True when `child` is `parent` or lies below it (both absolute and normalized). */
function isInside(parent: string, child: string): boolean {
  const relative = nodePath.relative(parent, child);
  return relative === '' || (relative !== '..' && !relative.startsWith(`..${nodePath.sep}`) && !nodePath.isAbsolute(relative));
}

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? (error as { code?: string }).code : undefined;
}

/** An id is a folder name: no separators, not hidden, not `.` or `..`. */
function isPlainId(id: unknown): id is string {
  return typeof id === 'string' && id !== '' && !id.startsWith('.') && !/[/\\\0]/.test(id);
}

interface SkillFolder {
  id: string;
  /** The real path of the skill's folder: every read must stay below it. */
  root: string;
  /** The real path of its SKILL.md. */
  file: string;
}

/**
 * Reads Agent Skills from a directory: each folder `<dir>/<id>` that holds a
 * `SKILL.md` is one skill. Its front matter gives `name` and `description`
 * (the id and `''` when missing); a SKILL.md without front matter is still a
 * skill, all of its text the body. Hidden folders, folders without SKILL.md,
 * unreadable ones and a SKILL.md that links out of its folder are not skills.
 * A `dir` that does not exist (or is not a directory) holds no skills. The
 * directory is read again on every call, so the source sees later edits.
 *
 * `readResource` takes a path relative to the skill's folder and refuses
 * (with a {@link SkillAccessError}) an absolute path, a `..` that climbs out,
 * a link whose real path is outside the folder, and anything that is not a
 * UTF-8 text file of at most `maxResourceBytes`.
 *
 * @example
 * ```ts
 * const source = nodeSkillSource('./skills');
 * for (const skill of await source.list()) console.log(skill.id, skill.description);
 * const guide = await source.readResource('pdf', 'reference/forms.md');
 * ```
 */
export function nodeSkillSource(dir: string, options: NodeSkillSourceOptions = {}): SkillSource {
  if (typeof dir !== 'string' || dir === '') throw new CairnTypeError('invalid_options', 'nodeSkillSource: dir must be a non-empty path.');
  const maxBytes = options.maxResourceBytes ?? DEFAULT_MAX_RESOURCE_BYTES;
  if (!Number.isInteger(maxBytes) || maxBytes <= 0) {
    throw new CairnTypeError('invalid_options', 'nodeSkillSource: maxResourceBytes must be a positive integer.');
  }
  const base = nodePath.resolve(dir);

  /** The skill folder for an id, or undefined when `<base>/<id>` is not a skill. */
  async function folderOf(id: string): Promise<SkillFolder | undefined> {
    if (!isPlainId(id)) return undefined;
    try {
      const root = await realpath(nodePath.join(base, id));
      const file = await realpath(nodePath.join(root, SKILL_FILE));
      if (!isInside(root, file)) return undefined;
      if (!(await stat(root)).isDirectory() || !(await stat(file)).isFile()) return undefined;
      return { id, root, file };
    } catch (error) {
      const code = errorCode(error);
      if (code !== undefined && UNUSABLE.has(code)) return undefined;
      throw error;
    }
  }

  async function requireFolder(id: string): Promise<SkillFolder> {
    const folder = await folderOf(id);
    if (!folder) throw new SkillAccessError('unknown-skill', `No skill "${String(id)}" in ${base}.`, String(id));
    return folder;
  }

  async function readSkillFile(folder: SkillFolder): Promise<ParsedSkillFile> {
    return parseSkillFile(await readFile(folder.file, 'utf8'));
  }

  return {
    async list() {
      let entries: Dirent[];
      try {
        entries = await readdir(base, { withFileTypes: true });
      } catch (error) {
        const code = errorCode(error);
        if (code === 'ENOENT' || code === 'ENOTDIR') return [];
        throw error;
      }
      const skills: SkillSummary[] = [];
      for (const entry of entries) {
        if (!entry.isDirectory() && !entry.isSymbolicLink()) continue;
        const folder = await folderOf(entry.name);
        if (!folder) continue;
        let parsed: ParsedSkillFile;
        try {
          parsed = await readSkillFile(folder);
        } catch (error) {
          const code = errorCode(error);
          if (code !== undefined && UNUSABLE.has(code)) continue;
          throw error;
        }
        skills.push(summaryOf(folder.id, parsed.fields));
      }
      return skills.sort((a, b) => compareIds(a.id, b.id));
    },

    async load(id) {
      return (await readSkillFile(await requireFolder(id))).body;
    },

    async readResource(id, path) {
      const folder = await requireFolder(id);
      const refuse = (reason: SkillAccessReason, message: string): never => {
        throw new SkillAccessError(reason, `Skill "${id}": ${message}`, id, typeof path === 'string' ? path : undefined);
      };
      if (typeof path !== 'string' || path.trim() === '' || path.includes('\0')) {
        return refuse('invalid-path', 'the resource path must be a non-empty relative path.');
      }
      if (nodePath.isAbsolute(path) || nodePath.win32.isAbsolute(path) || /^[A-Za-z]:/.test(path)) {
        return refuse('absolute-path', `"${path}" is absolute; give a path relative to the skill's folder.`);
      }
      // Resolved lexically first: `..` may move around inside the folder but not above it.
      const target = nodePath.resolve(folder.root, path);
      if (!isInside(folder.root, target)) return refuse('outside-skill', `"${path}" leads out of the skill's folder.`);
      let real: string;
      try {
        real = await realpath(target);
      } catch (error) {
        const code = errorCode(error);
        if (code === 'ENOENT' || code === 'ENOTDIR') return refuse('not-found', `no file "${path}" in the skill's folder.`);
        if (code === 'ELOOP') return refuse('outside-skill', `"${path}" is a symlink loop.`);
        throw error;
      }
      // Then by real path: a link inside the folder that points elsewhere is refused.
      if (!isInside(folder.root, real)) return refuse('outside-skill', `"${path}" is a link that leads out of the skill's folder.`);
      const info = await stat(real);
      if (!info.isFile()) return refuse('not-a-file', `"${path}" is not a file.`);
      if (info.size > maxBytes) return refuse('too-large', `"${path}" is ${info.size} bytes; at most ${maxBytes} are read.`);
      const bytes = await readFile(real);
      if (bytes.includes(0)) return refuse('not-text', `"${path}" is not a text file.`);
      try {
        return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
      } catch {
        return refuse('not-text', `"${path}" is not UTF-8 text.`);
      }
    },
  };
}

/** Code-unit order: the same on every machine, unlike localeCompare. */
function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---------------------------------------------------------------- options

function isSkillSource(value: unknown): value is SkillSource {
  if (typeof value !== 'object' || value === null) return false;
  const source = value as Record<string, unknown>;
  return typeof source.list === 'function' && typeof source.load === 'function' && typeof source.readResource === 'function';
}

/**
 * Normalizes the `skills` option into sources, in order: a string is a
 * directory read with {@link nodeSkillSource}; undefined is no sources.
 * Anything else throws a TypeError.
 */
export function resolveSkillSources(option: SkillsOption | undefined): SkillSource[] {
  if (option === undefined) return [];
  const items = Array.isArray(option) ? option : [option];
  return items.map((item, index) => {
    const where = Array.isArray(option) ? `skills[${index}]` : 'skills';
    if (typeof item === 'string') {
      if (item === '') throw new CairnTypeError('invalid_options', `${where} is an empty path; give a directory of skill folders.`);
      return nodeSkillSource(item);
    }
    if (isSkillSource(item)) return item;
    throw new CairnTypeError('invalid_options', `${where} must be a directory path or a skill source with list, load and readResource.`);
  });
}

/**
 * Throws a TypeError when one of your tools takes the name of a skill tool
 * (`load_skill`, `read_skill_resource`). Call it whenever the `skills` option
 * is set, even if its folders hold no skill yet, so a configuration does not
 * start failing the day someone adds one. Without skills those names are free.
 */
export function assertNoSkillToolCollision(tools: Record<string, unknown> | undefined): void {
  if (!tools) return;
  for (const name of SKILL_TOOL_NAMES) {
    if (Object.prototype.hasOwnProperty.call(tools, name)) {
      throw new CairnTypeError('invalid_options', `Tool "${name}" has the name of a skill tool; rename your tool, or run without skills.`);
    }
  }
}

// ---------------------------------------------------------------- tools

interface Entry {
  summary: SkillSummary;
  source: SkillSource;
}

function checkSummary(value: unknown, source: number): SkillSummary {
  const summary = value as Partial<SkillSummary> | null;
  if (typeof summary !== 'object' || summary === null || typeof summary.id !== 'string' || summary.id === '') {
    throw new CairnTypeError('invalid_options', `Skill source ${source} listed a skill without a string id.`);
  }
  return {
    id: summary.id,
    name: typeof summary.name === 'string' && summary.name !== '' ? summary.name : summary.id,
    description: typeof summary.description === 'string' ? summary.description : '',
  };
}

/** Escapes text placed inside the skills block, so a description cannot close it. */
function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function systemTextOf(skills: SkillSummary[]): string {
  const lines = [
    '<available_skills>',
    'Before you use one of these skills, call load_skill with its id to read its instructions; read_skill_resource reads the files they refer to.',
  ];
  for (const skill of skills) {
    lines.push(
      '<skill>',
      `<id>${escapeText(skill.id)}</id>`,
      `<name>${escapeText(skill.name)}</name>`,
      `<description>${escapeText(skill.description)}</description>`,
      '</skill>',
    );
  }
  lines.push('</available_skills>');
  return lines.join('\n');
}

/**
 * Reads every source once and builds what a run needs to use the skills: the
 * merged list, the `load_skill` and `read_skill_resource` tools and the
 * `<available_skills>` text for the system message.
 *
 * An id held by two sources is taken from the first; the later one is listed
 * in `shadowed`. The tools' parameters name the skill ids in an `enum`, so
 * they are part of the run's binding: resuming with another set of skills is
 * refused as a changed binding. Both tools are `replay: 'idempotent'` (a read
 * may run again) and throw for an id the list does not hold or a path outside
 * the skill's folder, which the model sees as an error result. With no skills
 * there are no tools and no text.
 *
 * @example
 * ```ts
 * const skills = await createSkillTools(resolveSkillSources('./skills'));
 * assertNoSkillToolCollision(myTools);
 * const result = await runAgent({
 *   model,
 *   prompt: 'Fill in the form.',
 *   system: skills.systemText,
 *   tools: { ...myTools, ...skills.tools },
 * });
 * ```
 */
export async function createSkillTools(sources: SkillSource[]): Promise<SkillToolset> {
  if (!Array.isArray(sources)) throw new CairnTypeError('invalid_options', 'createSkillTools takes an array of skill sources.');
  const entries = new Map<string, Entry>();
  const shadowed: SkillToolset['shadowed'] = [];
  for (const [index, source] of sources.entries()) {
    if (!isSkillSource(source)) throw new CairnTypeError('invalid_options', `Skill source ${index} must have list, load and readResource methods.`);
    const listed = await source.list();
    if (!Array.isArray(listed)) throw new CairnTypeError('invalid_options', `Skill source ${index}: list() must resolve to an array.`);
    for (const item of listed) {
      const summary = checkSummary(item, index);
      if (entries.has(summary.id)) shadowed.push({ id: summary.id, source: index });
      else entries.set(summary.id, { summary, source });
    }
  }
  const skills = [...entries.values()].map((entry) => entry.summary).sort((a, b) => compareIds(a.id, b.id));
  if (skills.length === 0) return { skills, tools: {}, systemText: undefined, shadowed };

  const ids = skills.map((skill) => skill.id);
  const entryFor = (args: unknown): Entry & { id: string } => {
    const id = (args as { id?: unknown } | null)?.id;
    const entry = typeof id === 'string' ? entries.get(id) : undefined;
    if (!entry) {
      throw new SkillAccessError(
        'unknown-skill',
        `No skill ${JSON.stringify(id ?? null)}; the skills are: ${ids.join(', ')}.`,
        typeof id === 'string' ? id : String(id),
      );
    }
    return { ...entry, id: entry.summary.id };
  };
  const idParameter = { type: 'string', enum: ids, description: 'The id of a skill listed in <available_skills>.' };

  const loadSkill: AgentTool<{ id: string }, string> = {
    description: 'Read the instructions of a skill listed in <available_skills>: the body of its SKILL.md.',
    parameters: {
      type: 'object',
      properties: { id: idParameter },
      required: ['id'],
      additionalProperties: false,
    },
    replay: 'idempotent',
    execute: async (args) => {
      const { id, source } = entryFor(args);
      return source.load(id);
    },
  };
  const readSkillResource: AgentTool<{ id: string; path: string }, string> = {
    description: "Read a text file bundled with a skill, by its path relative to the skill's folder (as the skill's instructions name it).",
    parameters: {
      type: 'object',
      properties: {
        id: idParameter,
        path: { type: 'string', description: "Relative path inside the skill's folder, such as reference/forms.md." },
      },
      required: ['id', 'path'],
      additionalProperties: false,
    },
    replay: 'idempotent',
    execute: async (args) => {
      const { id, source } = entryFor(args);
      const path = (args as { path?: unknown }).path;
      if (typeof path !== 'string' || path === '') {
        throw new SkillAccessError('invalid-path', `Skill "${id}": path must be a non-empty relative path.`, id);
      }
      return source.readResource(id, path);
    },
  };
  const tools: AgentTools = { [SKILL_TOOL_NAMES[0]]: loadSkill, [SKILL_TOOL_NAMES[1]]: readSkillResource };
  return { skills, tools, systemText: systemTextOf(skills), shadowed };
}
