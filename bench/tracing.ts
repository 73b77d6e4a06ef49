/**
 * The cost of tracing (docs/tracing.md): a 100-step tool loop on the
 * in-memory store with `tracing: false`, with the OpenTelemetry API installed
 * but no SDK registered (the default of an application that has not set up
 * tracing), and with a registered SDK recording every span into memory.
 * Runs alternate, so the machine's noise falls on all three alike; the table
 * gives the median time per step and its ratio to the untraced run.
 */
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createInMemoryAgentRunStore } from 'cairn/agent';
import { toolLoop } from './tool-loop.js';

const STEPS = 100;
const ROUNDS = 15;

export interface TracingFigures {
  off: number;
  noSdk: number;
  recording: number;
  spansPerRun: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function measureTracing(): Promise<TracingFigures> {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer('bench');
  const times = { off: [] as number[], noSdk: [] as number[], recording: [] as number[] };
  let spansPerRun = 0;
  const once = async (kind: keyof typeof times, i: number) => {
    const store = createInMemoryAgentRunStore();
    const extra = kind === 'off' ? { tracing: false as const } : kind === 'recording' ? { tracing: { tracer } } : {};
    const started = performance.now();
    const result = await toolLoop(store, `trace-${kind}-${i}`, STEPS, 'bare', extra);
    const elapsed = performance.now() - started;
    if (result.status !== 'completed') throw new Error(`bench tracing: run ended ${result.status}`);
    if (i > 1) times[kind].push(elapsed / STEPS);
    if (kind === 'recording') {
      spansPerRun = exporter.getFinishedSpans().length;
      exporter.reset();
    }
  };
  for (let i = 0; i < ROUNDS + 2; i++) {
    await once('off', i);
    await once('noSdk', i);
    await once('recording', i);
  }
  await provider.shutdown();
  trace.disable();
  return { off: median(times.off), noSdk: median(times.noSdk), recording: median(times.recording), spansPerRun };
}

export function printTracing(f: TracingFigures): void {
  const us = (ms: number) => `${(ms * 1000).toFixed(0)} µs`;
  console.log(`\nTracing: a ${STEPS}-step tool loop, in-memory store, median of ${ROUNDS} alternating runs each`);
  console.log('| run | per step | ratio to tracing: false |');
  console.log('| --- | ---: | ---: |');
  console.log(`| tracing: false | ${us(f.off)} | 1.00x |`);
  console.log(`| API installed, no SDK registered (the default) | ${us(f.noSdk)} | ${(f.noSdk / f.off).toFixed(2)}x |`);
  console.log(`| an SDK recording every span (${f.spansPerRun} spans a run) | ${us(f.recording)} | ${(f.recording / f.off).toFixed(2)}x |`);
}
