/**
 * What a run may read stays inside its bounds, seen through `cairn run`: an
 * AGENTS.md symlinked out of the repository is skipped with a warning, and a
 * skill resource path with `..` comes back to the model as an error.
 */
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cairn, json, tempDir, write } from './helpers.js';

const SECRET = 'TOP SECRET: the deploy key is hunter2';

describe('confinement through cairn run', () => {
  it('an AGENTS.md symlinked outside the repository is not read: a warning, and the model never sees its text', async () => {
    const base = tempDir();
    const repo = join(base, 'repo');
    mkdirSync(join(repo, '.git'), { recursive: true });
    write(base, {
      'outside/notes.md': SECRET,
      'repo/CLAUDE.md': 'Indent with tabs.',
      'repo/model.json': { turns: [{ text: 'Understood.' }] },
    });
    symlinkSync(join(base, 'outside', 'notes.md'), join(repo, 'AGENTS.md'));

    const result = await cairn(['run', 'What are the house rules?', '--model', 'model.json', '--project-dir', '.', '--json'], { cwd: repo });
    expect(result.code, result.stderr).toBe(0);
    const report = json(result);
    expect(report.warnings).toContainEqual(expect.objectContaining({ code: 'instructions-outside-root' }));
    const seen = JSON.stringify(report.messages);
    expect(seen).toContain('Indent with tabs.'); // the file inside the repository was loaded
    expect(seen).not.toContain('hunter2');
    expect(result.stdout).not.toContain('hunter2');

    // The human summary shows the warning too.
    const human = await cairn(['run', 'again', '--model', 'model.json', '--project-dir', '.', '--quiet'], { cwd: repo });
    expect(human.stdout).toMatch(/^warning \[instructions-outside-root\]: /m);
  });

  it('read_skill_resource with `..` comes back as an error and the outside file never reaches the model', async () => {
    const cwd = tempDir();
    write(cwd, {
      'secret.txt': SECRET,
      'skills/notes/SKILL.md': '---\nname: Notes\ndescription: How we write release notes.\n---\n\nWrite release notes in the past tense.\n',
      'skills/notes/template.md': 'Release notes template',
      'model.json': {
        turns: [
          {
            toolCalls: [
              { toolName: 'load_skill', args: { id: 'notes' } },
              { toolName: 'read_skill_resource', args: { id: 'notes', path: 'template.md' } },
              { toolName: 'read_skill_resource', args: { id: 'notes', path: '../../secret.txt' } },
            ],
          },
          { text: 'Done.' },
        ],
      },
    });
    const result = await cairn(['run', 'Write the notes.', '--model', 'model.json', '--skills', 'skills', '--json'], { cwd });
    expect(result.code, result.stderr).toBe(0);
    const report = json(result);
    const toolMessages = report.messages.filter((m: { role: string }) => m.role === 'tool');
    expect(toolMessages).toHaveLength(3);
    const [load, read, escape] = toolMessages;
    expect(load.isError ?? false).toBe(false);
    expect(JSON.stringify(load.content)).toContain('past tense');
    expect(JSON.stringify(read.content)).toContain('Release notes template');
    expect(escape).toMatchObject({ toolName: 'read_skill_resource', isError: true });
    expect(JSON.stringify(report.messages)).not.toContain('hunter2');
    expect(report.messages[0]).toMatchObject({ role: 'system' });
    expect(report.messages[0].content).toContain('<available_skills>');

    // The skills are recorded with the run: an inspect from another process sees the same transcript.
    const inspected = await cairn(['inspect', report.runId, '--json'], { cwd });
    expect(JSON.stringify(json(inspected).messages)).not.toContain('hunter2');
  });
});
