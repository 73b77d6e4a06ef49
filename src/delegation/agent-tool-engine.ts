/**
 * The engine entry points a sub-agent call drives its child run with. The
 * engine (src/agent/run-agent.ts) hands them over when it loads, so that the
 * tool-call actors, which the engine itself imports, can start a run without
 * an import circle. (Internal to Cairn.)
 */
import type { AgentOptions, ResumeOptions } from '../agent/options-types.js';
import type { AgentResult } from '../agent/record-types.js';

export interface ChildEngine {
  start(options: AgentOptions<unknown>): { result: Promise<AgentResult<unknown>> };
  resume(options: ResumeOptions<unknown>): { result: Promise<AgentResult<unknown>> };
}

let engine: ChildEngine | null = null;

export function provideChildEngine(given: ChildEngine): void {
  engine = given;
}

export function childEngine(): ChildEngine {
  if (!engine) throw new Error('The sub-agent engine was not loaded (import cairn/agent).');
  return engine;
}
