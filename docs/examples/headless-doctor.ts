// The doctor reads a configuration and says what will not work, with no network call.
import type { LanguageModel } from 'cairn/agent';
import { doctor, exitCodeFor } from 'cairn/headless';

// A provider model stands here as a plain object: the doctor only reads its provider and id.
const model: LanguageModel = {
  specificationVersion: 'cairn-model-1',
  provider: 'anthropic',
  modelId: 'claude-opus-4-7',
  doGenerate: async () => { throw new Error('never called'); },
};

const report = await doctor({
  model,
  effort: 'none',
  temperature: 0.2,
  budget: { usd: 2 },
  tools: { 'deploy service': { parameters: { type: 'object' }, execute: () => 'ok' } },
  env: {}, // no ANTHROPIC_API_KEY
});
for (const finding of report.findings) {
  console.log(finding.severity, finding.code, finding.path ?? '');
}
console.log(`exit code: ${exitCodeFor(report)}`);
