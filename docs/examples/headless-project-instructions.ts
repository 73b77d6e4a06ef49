// The project's instruction files, from the repository root down to a package.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadProjectInstructions } from 'cairn/headless';

const repo = mkdtempSync(join(tmpdir(), 'cairn-repo-'));
mkdirSync(join(repo, '.git'));
mkdirSync(join(repo, 'packages', 'app'), { recursive: true });
writeFileSync(join(repo, 'AGENTS.md'), 'Run `npm test` before you commit.\n');
writeFileSync(join(repo, 'packages', 'app', 'CLAUDE.md'), 'This package uses pnpm.\n');
// A copy of the root file repeats its text: it is loaded once.
writeFileSync(join(repo, 'packages', 'app', 'AGENTS.md'), 'Run `npm test` before you commit.\n');

const project = await loadProjectInstructions(join(repo, 'packages', 'app'));
console.log(project.files.map((file) => file.relativePath));
console.log(project.skipped.map((file) => `${file.relativePath}: ${file.reason}`));
console.log(project.message?.role, project.includedBytes);
rmSync(repo, { recursive: true, force: true });
