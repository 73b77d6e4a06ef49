// A stored run on its charts: one HTML file to open offline, or Mermaid text at the run's states.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInMemoryAgentRunStore, runAgent } from 'cairn/agent';
import { describeRun, renderRunChartHtml, runMachine, toMermaid } from 'cairn/machines';
import { createMockModel } from 'cairn/testing';

const store = createInMemoryAgentRunStore();
await runAgent({
  model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'deploy', args: { service: 'api' } }] }] }),
  prompt: 'Deploy the api.',
  session: { store, runId: 'deploy-3', scope: 'ops' },
  tools: {
    deploy: { description: 'Deploy a service.', parameters: { type: 'object' as const }, needsApproval: true, execute: () => 'deployed' },
  },
});
const envelope = (await store.load('deploy-3', { scope: 'ops' }))!;

// The page: the run chart and the open call's chart with their states marked, and the timeline.
const html = renderRunChartHtml(envelope);
const file = join(mkdtempSync(join(tmpdir(), 'cairn-chart-')), 'deploy-3.html');
writeFileSync(file, html);
const marked = [...html.matchAll(/data-state="([^"]*)"[^>]*data-current="true"/g)].map((m) => m[1]);
console.log(`marked on the page: ${marked.join(', ')}`);
console.log(`charts on the page: ${[...html.matchAll(/<section class="chart[^"]*" data-chart="(\w+)"/g)].map((m) => m[1]).join(', ')}`);
console.log(`loads anything: ${/https?:\/\/|<link|<script src/.test(html)}`);

// The same states as text, for a Markdown page or a terminal.
const run = describeRun(envelope);
const mermaid = toMermaid(runMachine, { highlight: run.states });
console.log(mermaid.split('\n').filter((line) => line.includes('current')).join('\n'));
