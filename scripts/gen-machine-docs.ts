// Writes docs/machines.md (each machine's description and Mermaid chart) from machines/index.ts,
// followed by the hand-written sections in docs/machines/*.md.
// Run: npm run docs:machines. test/machines/docs-fresh.test.ts fails while the committed page is stale.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { machineCatalog } from '../machines/index.js';
// A relative import, not 'cairn/machines': the npm script runs tsx without the 'source' condition.
import { renderMachineDocs } from '../src/machines/docs.js';
import { machineDocSections } from './machine-doc-sections.js';

const target = fileURLToPath(new URL('../docs/machines.md', import.meta.url));
writeFileSync(target, renderMachineDocs(machineCatalog, { sections: machineDocSections() }));
console.log(`wrote docs/machines.md (${machineCatalog.length} machine${machineCatalog.length === 1 ? '' : 's'})`);
