// A run's spans, read with the OpenTelemetry SDK's in-memory exporter: the run, its steps, the model calls and the tool calls.
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createInMemoryAgentRunStore, runAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));

const store = createInMemoryAgentRunStore();
const result = await runAgent({
  model: createMockModel({
    modelId: 'support-1',
    responses: [
      { toolCalls: [{ toolCallId: 'c1', toolName: 'lookupOrder', args: { orderId: 'A-7' } }], usage: { inputTokens: 40, outputTokens: 8 } },
      { text: 'Order A-7 shipped on Monday.', usage: { inputTokens: 60, outputTokens: 9 } },
    ],
  }),
  prompt: 'Where is my order A-7?',
  session: { store, runId: 'support-42', scope: 'tenant-a' },
  tools: { lookupOrder: { parameters: { type: 'object' }, execute: () => ({ status: 'shipped' }) } },
});
console.log(result.status); // completed

// Finished spans in the order they ended; each line: name, then the attributes that say what it was.
const shown = ['cairn.step', 'gen_ai.request.model', 'gen_ai.usage.input_tokens', 'gen_ai.response.finish_reasons', 'cairn.tool.outcome', 'cairn.tool.receipt', 'cairn.save.revision', 'cairn.run.status'];
for (const span of exporter.getFinishedSpans()) {
  const facts = shown.filter((key) => span.attributes[key] !== undefined).map((key) => `${key}=${String(span.attributes[key])}`);
  console.log(`${span.name}${facts.length > 0 ? `  ${facts.join(' ')}` : ''}`);
}

// The record keeps the run span's context, so a resume in another process links its run span to this one.
const stored = await store.load('support-42', { scope: 'tenant-a' });
const run = exporter.getFinishedSpans().find((s) => s.name === 'cairn.run')!;
console.log(stored?.trace?.spanId === run.spanContext().spanId); // true
