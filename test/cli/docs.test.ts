/**
 * docs/cli.md cannot drift from what the command does. Each scenario named by
 * `<!-- cli: <name> -->` runs in its own empty directory, its blocks in page
 * order, with `npx cairn` pointing at this checkout:
 *
 * - `<!-- cli-file: <name> <path> -->` above a block writes the block to <path>;
 * - in a `console` block, each `$ ` line is a command and the lines below it
 *   are its stdout, matched in full (runs of spaces match any spacing;
 *   `<word>` matches one word and a later `<word>` stands for what it matched);
 * - in a `sh` block, each line is a command;
 * - `# exit N` after a command is its expected exit code (0 otherwise).
 */
import { chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT, shellLine, tempDir, write, type Result } from './helpers.js';

const page = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8').split('\n');

interface Step {
  kind: 'file' | 'console' | 'sh';
  line: number;
  path?: string;
  body: string[];
}

const scenarios = new Map<string, Step[]>();
for (let i = 0; i < page.length; i++) {
  const marker = /^<!-- cli(-file)?: ([a-z0-9-]+)(?: (\S+))? -->$/.exec(page[i]!);
  if (!marker) continue;
  const fence = /^```(\S*)$/.exec(page[i + 1] ?? '');
  if (!fence) throw new Error(`docs/cli.md:${i + 1}: a cli marker must sit right above a fenced block`);
  const end = page.findIndex((l, j) => j > i + 1 && l.startsWith('```'));
  const body = page.slice(i + 2, end);
  const kind = marker[1] ? 'file' : fence[1] === 'console' ? 'console' : 'sh';
  if (!marker[1] && fence[1] !== 'console' && fence[1] !== 'sh') throw new Error(`docs/cli.md:${i + 1}: run blocks are console or sh`);
  const steps = scenarios.get(marker[2]!) ?? [];
  steps.push({ kind, line: i + 2, ...(marker[3] ? { path: marker[3] } : {}), body });
  scenarios.set(marker[2]!, steps);
  i = end;
}

/** A directory with an `npx` that runs this checkout's cairn, put first on PATH. */
const shimDir = (() => {
  const dir = tempDir('cairn-docs-shim-');
  write(dir, {
    npx: `#!/bin/sh\nif [ "$1" = cairn ]; then shift; exec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"; fi\necho "npx is only shimmed for cairn" >&2; exit 127\n`,
  });
  chmodSync(join(dir, 'npx'), 0o755);
  return dir;
})();

function shell(command: string, cwd: string): Promise<Result> {
  return shellLine(command, cwd, { PATH: `${shimDir}:${process.env.PATH}` });
}

const expectedExit = (command: string) => Number(/#\s*exit (\d+)\s*$/.exec(command)?.[1] ?? 0);
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Replaces the placeholders a command uses with what they matched before. */
function fill(command: string, values: Map<string, string>, where: string): string {
  return command.replace(/<([A-Za-z]+)>/g, (_m, name: string) => {
    const value = values.get(name);
    if (value === undefined) throw new Error(`${where}: <${name}> was not matched by an earlier output`);
    return value;
  });
}

/** Matches stdout against the expected lines, learning the placeholders' values. */
function matchOutput(stdout: string, expected: string[], values: Map<string, string>, where: string): void {
  const names: string[] = [];
  const source = expected.map((line) => line.trimEnd().split(/(<[A-Za-z]+>)/).map((part) => {
    const placeholder = /^<([A-Za-z]+)>$/.exec(part);
    if (!placeholder) return escape(part).replace(/ {2,}/g, ' +');
    const name = placeholder[1]!;
    if (values.has(name)) return escape(values.get(name)!);
    const seen = names.indexOf(name);
    if (seen >= 0) return `\\${seen + 1}`;
    names.push(name);
    return '(\\S+)';
  }).join('')).join('\n');
  const actual = stdout.split('\n').map((l) => l.trimEnd()).join('\n').replace(/\n+$/, '');
  const match = new RegExp(`^${source.replace(/(\\n)+$/, '')}$`).exec(actual);
  expect(match, `${where}: stdout was\n${stdout}`).not.toBeNull();
  names.forEach((name, i) => values.set(name, match![i + 1]!));
}

describe('docs/cli.md', () => {
  it('has runnable scenarios', () => {
    expect([...scenarios.keys()]).toEqual(expect.arrayContaining(['demo', 'notes', 'doctor', 'exit-codes']));
  });

  it.each([...scenarios.keys()])('scenario %s runs as the page says', async (name) => {
    const cwd = tempDir('cairn-docs-');
    const values = new Map<string, string>();
    for (const step of scenarios.get(name)!) {
      if (step.kind === 'file') {
        write(cwd, { [step.path!]: `${step.body.join('\n')}\n` });
        continue;
      }
      const commands: Array<{ command: string; output: string[]; line: number }> = [];
      step.body.forEach((text, offset) => {
        const line = step.line + offset + 1;
        if (step.kind === 'sh') {
          if (text.trim() !== '' && !text.trimStart().startsWith('#')) commands.push({ command: text, output: [], line });
        } else if (text.startsWith('$ ')) {
          commands.push({ command: text.slice(2), output: [], line });
        } else {
          if (commands.length === 0) throw new Error(`docs/cli.md:${line}: output before any command`);
          commands.at(-1)!.output.push(text);
        }
      });
      for (const { command, output, line } of commands) {
        const where = `docs/cli.md:${line}`;
        const result = await shell(fill(command, values, where), cwd);
        expect(result.code, `${where}: ${command}\n${result.stderr}`).toBe(expectedExit(command));
        if (step.kind === 'console') matchOutput(result.stdout, output, values, where);
      }
    }
  });
});
