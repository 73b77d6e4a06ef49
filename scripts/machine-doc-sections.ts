// The hand-written sections of docs/machines.md: docs/machines/*.md in file-name order.
// Shared by the generator and the staleness test, so both put the same sections on the page.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('../docs/machines/', import.meta.url));

export function machineDocSections(): string[] {
  return readdirSync(dir).filter((f) => f.endsWith('.md')).sort().map((f) => readFileSync(`${dir}${f}`, 'utf8'));
}
