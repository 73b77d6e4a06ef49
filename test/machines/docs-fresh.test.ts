import { existsSync, readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { machineCatalog } from '../../machines/index.js';
import { renderMachineDocs } from 'cairn/machines';
import { machineDocSections } from '../../scripts/machine-doc-sections.js';

const STALE = 'docs/machines.md is stale: run npm run docs:machines';

it('docs/machines.md is generated from the current machine catalog', () => {
  const path = new URL('../../docs/machines.md', import.meta.url);
  expect(existsSync(path), STALE).toBe(true);
  expect(readFileSync(path, 'utf8'), STALE).toBe(renderMachineDocs(machineCatalog, { sections: machineDocSections() }));
});
