import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// The published entry points, as a user's Node resolves them (dist/, no source condition).
describe('package exports', () => {
  it('serves cairn/agent, cairn/testing and cairn/machines from the build, with type declarations', () => {
    for (const sub of ['agent', 'testing', 'machines']) {
      expect(existsSync(`dist/src/${sub}/index.js`), `dist/src/${sub}/index.js`).toBe(true);
      expect(existsSync(`dist/src/${sub}/index.d.ts`), `dist/src/${sub}/index.d.ts`).toBe(true);
    }
    const script = `
      const { runAgent } = await import('cairn/agent');
      const { createMockModel } = await import('cairn/testing');
      const { toMermaid, runMachine, toolCallMachine } = await import('cairn/machines');
      const r = await runAgent({ model: createMockModel({ responses: [{ text: 'hi' }] }), prompt: 'x' });
      console.log(r.status, r.text, toMermaid(toolCallMachine).startsWith('stateDiagram-v2'), typeof runMachine.provide);
    `;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(out.trim()).toBe('completed hi true function');
  });
});

describe('cairn/headless from the build', () => {
  it('runs a headless leg and maps its report to an exit code', () => {
    expect(existsSync('dist/src/headless/index.js')).toBe(true);
    expect(existsSync('dist/src/headless/index.d.ts')).toBe(true);
    const script = `
      const { createInMemoryAgentRunStore } = await import('cairn/agent');
      const { runHeadless, exitCodeFor, HEADLESS_EXIT_CODES } = await import('cairn/headless');
      const { createMockModel } = await import('cairn/testing');
      const report = await runHeadless({ model: createMockModel({ responses: [{ text: 'green' }] }), prompt: 'x', store: createInMemoryAgentRunStore() });
      console.log(report.outcome, report.output, exitCodeFor(report), HEADLESS_EXIT_CODES.pending);
    `;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(out.trim()).toBe('completed green 0 3');
  });
});

describe('cairn/embed from the build', () => {
  it('gives actor logic that a host machine invokes, and the run it drives completes', () => {
    expect(existsSync('dist/src/embed/index.js')).toBe(true);
    expect(existsSync('dist/src/embed/index.d.ts')).toBe(true);
    const script = `
      const { createActor, toPromise } = await import('xstate');
      const { createInMemoryAgentRunStore } = await import('cairn/agent');
      const { agentRunLogic } = await import('cairn/embed');
      const { createMockModel } = await import('cairn/testing');
      const logic = agentRunLogic({ model: createMockModel({ responses: [{ text: 'hi' }] }), store: createInMemoryAgentRunStore(), scope: 's' });
      const result = await toPromise(createActor(logic, { input: { runId: 'e-1', prompt: 'x' } }).start());
      console.log(result.status, result.text, result.runId);
    `;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(out.trim()).toBe('completed hi e-1');
  });
});
