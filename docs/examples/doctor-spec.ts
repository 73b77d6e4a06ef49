import { createAnthropic } from 'cairn/anthropic';
import { doctor, exitCodeFor } from 'cairn/headless';

const report = await doctor({
  model: createAnthropic({ apiKey: process.env.ANTHROPIC_API_KEY })('claude-opus-5-5'),
  effort: 'none',
  temperature: 0.2,
  budget: { usd: 2 },
});
for (const finding of report.findings) {
  console.log(finding.severity, finding.code, finding.message);
}
process.exitCode = exitCodeFor(report); // 8 when a finding is an error
