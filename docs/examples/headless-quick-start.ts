// A headless run without a key: the report is plain JSON and maps to an exit code.
import { createInMemoryAgentRunStore } from 'cairn/agent';
import { exitCodeFor, runHeadless } from 'cairn/headless';
import { createMockModel } from 'cairn/testing';

const report = await runHeadless({
  model: createMockModel({ responses: [{ text: 'The build is green.' }] }),
  prompt: 'Check the build.',
  store: createInMemoryAgentRunStore(),
  runId: 'nightly-2026-10-11',
});

const { outcome, status, runId, output, cost, pending, warnings } = report;
console.log(JSON.stringify({ outcome, status, runId, output, cost, pending, warnings }, null, 2));
console.log(`exit code: ${exitCodeFor(report)}`);
