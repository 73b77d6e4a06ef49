/**
 * One traced leg in its own process: starts (or resumes) the run of
 * test/tracing/tracing.test.ts on the SQLite file named in argv, with its own
 * in-memory exporter, and prints the result's status and the finished spans
 * as one JSON line.
 */
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resumeAgent, runAgent } from '../../src/agent/index.js';
import { createSqliteOpsStore } from '../../src/ops/sqlite/index.js';
import { tracedOptions } from './scenario.js';

const [path, mode] = process.argv.slice(2) as [string, 'start' | 'resume'];
const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
const ops = createSqliteOpsStore({ path });
const options = tracedOptions(ops.agentRuns);
let status: string;
if (mode === 'start') {
  status = (await runAgent(options)).status;
} else {
  const stored = await ops.agentRuns.load('traced-1', { scope: 'tenant-t' });
  const approval = stored!.pendingApprovals[0]!;
  status = (await resumeAgent({ ...options, approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }] })).status;
}
const spans = exporter.getFinishedSpans().map((s) => ({
  name: s.name,
  spanId: s.spanContext().spanId,
  traceId: s.spanContext().traceId,
  attributes: s.attributes,
  links: s.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
}));
ops.close();
process.stdout.write(`${JSON.stringify({ status, spans })}\n`);
