import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createInMemoryAgentRunStore } from 'cairn/agent';
import {
  DOCTOR_CODES, MODEL_PROFILES, doctor, exitCodeFor, modelProfile,
  type DoctorFinding, type DoctorOptions, type DoctorReport, type HeadlessRunOptions, type PriceQuery, type SkillSource,
} from 'cairn/headless';
import { createMockModel } from 'cairn/testing';

const doGenerate = async () => ({ text: '', toolCalls: [], finishReason: 'stop' as const, usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 } });
const fakeModel = (provider: string, modelId: string) => ({ specificationVersion: 'cairn-model-1' as const, provider, modelId, doGenerate });
const mock = () => createMockModel({ responses: [{ text: 'ok' }] });
const claude = fakeModel('anthropic', 'claude-opus-4-7');
const sonnet = fakeModel('anthropic', 'claude-sonnet-4-5-20250929');
const keys = { ANTHROPIC_API_KEY: 'sk-ant-test', OPENAI_API_KEY: 'sk-test', GEMINI_API_KEY: 'g-test' };
const obj = { type: 'object', properties: { env: { type: 'string' } }, required: ['env'] };
const deploy = { description: 'Deploy.', parameters: obj, execute: async () => 'done' };

const codes = (r: DoctorReport) => r.findings.map((f) => f.code);
const find = (r: DoctorReport, code: string): DoctorFinding | undefined => r.findings.find((f) => f.code === code);
/** A report holding `code` (with severity and path when given); returns the finding. */
function expectFinding(r: DoctorReport, code: string, want: Partial<DoctorFinding> = {}): DoctorFinding {
  const f = find(r, code);
  expect(f, `expected ${code} in ${JSON.stringify(r.findings, null, 1)}`).toBeDefined();
  expect(f).toMatchObject(want);
  expect(f!.message.length).toBeGreaterThan(20);
  return f!;
}
const run = (o: Record<string, unknown>) => doctor({ env: keys, ...o } as DoctorOptions);

describe('doctor: a clean configuration', () => {
  it('reports nothing for a keyless mock run with tools, output and a budget', async () => {
    const r = await doctor({
      model: mock(), env: {}, tools: { deploy }, toolChoice: { toolName: 'deploy' }, budget: { usd: 1 },
      output: { schema: obj, validate: (v: unknown) => v }, maxSteps: 5, store: 'sqlite', nodeVersion: '20.11.1',
    });
    expect(r).toEqual({ kind: 'doctor', ok: true, findings: [] });
    expect(exitCodeFor(r)).toBe(0);
  });

  it('reports no error for a known provider model whose key is set', async () => {
    const r = await run({ model: sonnet, temperature: 0.5, effort: undefined, budget: { usd: 3 }, tools: { deploy } });
    expect(r.ok).toBe(true);
    expect(r.findings).toEqual([]);
  });

  it("accepts a run's own typed options", async () => {
    const options: HeadlessRunOptions = { model: mock(), prompt: 'Check the build.', store: createInMemoryAgentRunStore(), runId: 'n-1' };
    expect((await doctor(options)).findings).toEqual([]);
  });
});

describe('doctor: the spec example, adapted', () => {
  it('finds the missing key and what the profile refuses, and exits 8', async () => {
    const r = await doctor({ model: claude, effort: 'none', temperature: 0.2, budget: { usd: 2 }, env: {} });
    expect(r.ok).toBe(false);
    expectFinding(r, 'api-key-missing', { severity: 'error', path: 'env' });
    expect(find(r, 'api-key-missing')!.message).toContain('ANTHROPIC_API_KEY');
    expectFinding(r, 'effort-unsupported', { severity: 'error', path: 'effort' });
    expect(find(r, 'effort-unsupported')!.message).toContain('low, medium, high, xhigh, max');
    expectFinding(r, 'sampling-unsupported', { severity: 'error', path: 'temperature' });
    expect(codes(r)).not.toContain('unpriced-model'); // the bundled table prices Opus 4.x
    expect(exitCodeFor(r)).toBe(8);
  });
});

describe('doctor: options shape', () => {
  it.each([null, 'opts', 42, [1]])('reports options-invalid for %j and does not throw', async (bad) => {
    const r = await doctor(bad as unknown as DoctorOptions);
    expect(r.ok).toBe(false);
    expect(codes(r)).toEqual(['options-invalid']);
  });

  it('reports a getter that throws as a finding', async () => {
    const options = { get model(): unknown { throw new Error('boom'); } };
    const r = await doctor(options as DoctorOptions);
    expectFinding(r, 'options-invalid', { severity: 'error' });
  });

  it('reports model-missing and model-invalid', async () => {
    expectFinding(await run({}), 'model-missing', { severity: 'error', path: 'model' });
    expectFinding(await run({ model: 'claude-opus-4-7' }), 'model-invalid', { path: 'model' });
    const wrong = await run({ model: { ...claude, specificationVersion: 'v2' } });
    expect(expectFinding(wrong, 'model-invalid').message).toContain("'cairn-model-1'");
    const noGenerate = await run({ model: { specificationVersion: 'cairn-model-1', provider: 'openai', modelId: 'gpt-4o' } });
    expect(expectFinding(noGenerate, 'model-invalid').message).toContain('doGenerate');
  });

  it('reports unknown top-level keys as info and legacy hooks as errors', async () => {
    const r = await run({ model: mock(), temprature: 0.3, doneWhen: () => true });
    expectFinding(r, 'option-unknown', { severity: 'info', path: 'temprature' });
    expectFinding(r, 'option-legacy', { severity: 'error', path: 'doneWhen' });
    expect(r.findings[0]!.severity).toBe('error'); // errors come first
  });

  it.each([['maxSteps', 0], ['maxSteps', 2.5], ['maxOutputAttempts', '3'], ['maxVerifyAttempts', -1]])('reports %s = %j as option-invalid', async (key, value) => {
    expectFinding(await run({ model: mock(), [key]: value }), 'option-invalid', { severity: 'error', path: key });
  });

  it('checks budget, deps, env, apiKeyEnv, effort, temperature and promptCaching shapes', async () => {
    const r = await run({
      model: mock(), budget: { usd: -1, tokens: 1.5, unknownPrice: 'maybe' }, deps: { priceProvider: 'cheap', breaker: { threshold: 0 } },
      effort: 'extreme', temperature: 'warm', promptCaching: 'yes',
    });
    const paths = r.findings.filter((f) => f.code === 'option-invalid').map((f) => f.path);
    expect(paths).toEqual(expect.arrayContaining([
      'budget.usd', 'budget.tokens', 'budget.unknownPrice', 'deps.priceProvider', 'deps.breaker.threshold', 'effort', 'temperature', 'promptCaching',
    ]));
    expectFinding(await run({ model: claude, env: 'x' }), 'option-invalid', { path: 'env' });
    expectFinding(await run({ model: claude, apiKeyEnv: '' }), 'option-invalid', { path: 'apiKeyEnv' });
    expectFinding(await run({ model: mock(), nodeVersion: 'latest' }), 'option-invalid', { path: 'nodeVersion' });
    expectFinding(await run({ model: mock(), store: 'redis' }), 'option-invalid', { path: 'store' });
  });
});

describe('doctor: tools', () => {
  it('reports tools that are not a record', async () => {
    expectFinding(await run({ model: mock(), tools: [deploy] }), 'tools-invalid', { path: 'tools' });
  });

  it('reports invalid tool names', async () => {
    const r = await run({ model: mock(), tools: { 'deploy prod': deploy, ['x'.repeat(65)]: deploy, ok_name: deploy } });
    expect(r.findings.filter((f) => f.code === 'tool-name-invalid')).toHaveLength(2);
    expect(find(r, 'tool-name-invalid')!.path).toBe('tools["deploy prod"]');
  });

  it('reports a tool that is not an object', async () => {
    expectFinding(await run({ model: mock(), tools: { deploy: 'run it' } }), 'tool-invalid', { path: 'tools.deploy' });
  });

  it.each([
    ['missing parameters', { execute: deploy.execute }, 'tools.deploy.parameters'],
    ['a non-object root', { parameters: { type: 'string' } }, 'tools.deploy.parameters.type'],
    ['an unknown type', { parameters: { type: 'object', properties: { n: { type: 'int' } } } }, 'tools.deploy.parameters.properties.n.type'],
    ['required naming no property', { parameters: { type: 'object', properties: { a: {} }, required: ['b'] } }, 'tools.deploy.parameters.required'],
    ['required not strings', { parameters: { type: 'object', required: [1] } }, 'tools.deploy.parameters.required'],
    ['properties not an object', { parameters: { type: 'object', properties: [] } }, 'tools.deploy.parameters.properties'],
    ['a dangling $ref', { parameters: { type: 'object', properties: { a: { $ref: '#/$defs/nope' } } } }, 'tools.deploy.parameters.properties.a.$ref'],
    ['a bad pattern', { parameters: { type: 'object', properties: { a: { type: 'string', pattern: '(' } } } }, 'tools.deploy.parameters.properties.a.pattern'],
    ['an empty enum', { parameters: { type: 'object', properties: { a: { enum: [] } } } }, 'tools.deploy.parameters.properties.a.enum'],
    ['min above max', { parameters: { type: 'object', properties: { a: { type: 'string', minLength: 5, maxLength: 2 } } } }, 'tools.deploy.parameters.properties.a.minLength'],
    ['bad items', { parameters: { type: 'object', properties: { a: { type: 'array', items: 'string' } } } }, 'tools.deploy.parameters.properties.a.items'],
    ['a function inside', { parameters: { type: 'object', default: () => 1 } }, 'tools.deploy.parameters.default'],
  ])('reports tool-schema-invalid for %s', async (_label, tool, path) => {
    const r = await run({ model: mock(), tools: { deploy: tool } });
    expectFinding(r, 'tool-schema-invalid', { severity: 'error', path });
  });

  it('reports a cyclic schema without looping', async () => {
    const node: Record<string, unknown> = { type: 'object' };
    node.properties = { self: node };
    expectFinding(await run({ model: mock(), tools: { deploy: { parameters: node } } }), 'tool-schema-invalid');
  });

  it('accepts a richer valid schema', async () => {
    const parameters = {
      type: 'object',
      properties: {
        tags: { type: 'array', items: { type: 'string', minLength: 1 }, maxItems: 5 },
        when: { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }] },
        target: { $ref: '#/$defs/target' },
        count: { type: ['integer', 'null'], minimum: 0, maximum: 10 },
      },
      required: ['target'],
      additionalProperties: false,
      $defs: { target: { type: 'string', enum: ['prod', 'staging'] } },
    };
    expect((await run({ model: mock(), tools: { deploy: { parameters } } })).findings).toEqual([]);
  });

  it('reports execute, needsApproval and replay of the wrong kind', async () => {
    const r = await run({ model: mock(), tools: { deploy: { parameters: obj, execute: 'x', needsApproval: 'yes', replay: 'always' } } });
    expectFinding(r, 'tool-execute-invalid', { path: 'tools.deploy.execute' });
    expectFinding(r, 'tool-needs-approval-invalid', { path: 'tools.deploy.needsApproval' });
    expectFinding(r, 'tool-replay-invalid', { path: 'tools.deploy.replay' });
  });

  it('reports a JSON Schema outputSchema without validateResult', async () => {
    const r = await run({ model: mock(), tools: { deploy: { ...deploy, outputSchema: { type: 'string' } } } });
    expectFinding(r, 'tool-validator-missing', { path: 'tools.deploy.outputSchema' });
  });

  it('reports a tool taking a skill tool name only when skills are given', async () => {
    const tools = { load_skill: deploy, read_skill_resource: deploy };
    expect(codes(await run({ model: mock(), tools }))).not.toContain('skill-tool-collision');
    const r = await run({ model: mock(), tools, skills: [fakeSource()] });
    expect(r.findings.filter((f) => f.code === 'skill-tool-collision').map((f) => f.path)).toEqual(['tools.load_skill', 'tools.read_skill_resource']);
  });
});

function fakeSource(): SkillSource & { list: ReturnType<typeof vi.fn> } {
  return { list: vi.fn(async () => []), load: async () => '', readResource: async () => '' };
}

describe('doctor: skills', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-doctor-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('accepts a source, a directory or a list of both, without calling list()', async () => {
    const source = fakeSource();
    expect((await run({ model: mock(), skills: [source, dir] })).findings).toEqual([]);
    expect((await run({ model: mock(), skills: dir })).findings).toEqual([]);
    expect(source.list).not.toHaveBeenCalled();
  });

  it('reports a wrong shape and a missing directory', async () => {
    expectFinding(await run({ model: mock(), skills: 42 }), 'skills-invalid', { path: 'skills' });
    expectFinding(await run({ model: mock(), skills: [dir, { list: () => [] }] }), 'skills-invalid', { path: 'skills[1]' });
    expectFinding(await run({ model: mock(), skills: join(dir, 'nope') }), 'skills-dir-missing', { path: 'skills' });
  });
});

describe('doctor: output', () => {
  const validate = (v: unknown) => v;
  it('reports output, schema, validate, mode and name problems', async () => {
    expectFinding(await run({ model: mock(), output: 'json' }), 'output-invalid', { path: 'output' });
    expectFinding(await run({ model: mock(), output: { validate } }), 'output-schema-missing', { path: 'output.schema' });
    expectFinding(await run({ model: mock(), output: { schema: obj } }), 'output-validate-missing', { path: 'output.validate' });
    expectFinding(await run({ model: mock(), output: { schema: obj, validate, mode: 'xml' } }), 'output-mode-invalid', { path: 'output.mode' });
    expectFinding(await run({ model: mock(), output: { schema: { type: 'nope' }, validate } }), 'output-schema-invalid', { path: 'output.schema.type' });
    expectFinding(await run({ model: mock(), output: { schema: obj, validate, mode: 'tool', name: 'final answer' } }), 'output-name-invalid');
  });

  it("requires an object schema in 'tool' mode only", async () => {
    const schema = { type: 'string' };
    expect((await run({ model: mock(), output: { schema, validate } })).findings).toEqual([]);
    expectFinding(await run({ model: mock(), output: { schema, validate, mode: 'tool' } }), 'output-schema-invalid');
  });

  it('accepts a Standard Schema value without validate', async () => {
    const schema = { '~standard': { version: 1, vendor: 'test', validate: (value: unknown) => ({ value }) } };
    expect((await run({ model: mock(), output: { schema } })).findings).toEqual([]);
  });

  it("reports the output tool's name colliding with a tool", async () => {
    const r = await run({ model: mock(), tools: { json_output: deploy }, output: { schema: obj, validate, mode: 'tool' } });
    expectFinding(r, 'output-name-collision', { path: 'output.name' });
  });
});

describe('doctor: toolChoice', () => {
  it('accepts the strings and a known tool; reports an unknown tool, no tools, and a bad shape', async () => {
    for (const toolChoice of ['auto', 'none', 'required', { toolName: 'deploy' }]) {
      expect((await run({ model: mock(), tools: { deploy }, toolChoice })).findings).toEqual([]);
    }
    expectFinding(await run({ model: mock(), tools: { deploy }, toolChoice: { toolName: 'ship' } }), 'tool-choice-unknown-tool', { path: 'toolChoice.toolName' });
    expectFinding(await run({ model: mock(), toolChoice: 'required' }), 'tool-choice-no-tools', { path: 'toolChoice' });
    expectFinding(await run({ model: mock(), toolChoice: 'any' }), 'option-invalid', { path: 'toolChoice' });
    expect((await run({ model: mock(), skills: [fakeSource()], toolChoice: { toolName: 'load_skill' } })).findings).toEqual([]);
  });
});

describe('doctor: budget and prices', () => {
  const unpriced = fakeModel('openai', 'gpt-3.5-turbo');

  it('reports an unpriced model by budget: info without one, warning with one, error with reject', async () => {
    expectFinding(await run({ model: unpriced }), 'unpriced-model', { severity: 'info' });
    expectFinding(await run({ model: unpriced, budget: { usd: 2 } }), 'unpriced-model', { severity: 'warning', path: 'budget.usd' });
    const r = await run({ model: unpriced, budget: { usd: 2, unknownPrice: 'reject' } });
    expectFinding(r, 'unpriced-model', { severity: 'error', path: 'budget.unknownPrice' });
    expect(r.ok).toBe(false);
  });

  it('calls deps.priceProvider exactly once, with a two-token usage', async () => {
    const priceProvider = vi.fn((_q: PriceQuery) => 0.5);
    const r = await run({ model: unpriced, budget: { usd: 2 }, deps: { priceProvider } });
    expect(priceProvider).toHaveBeenCalledTimes(1);
    expect(priceProvider).toHaveBeenCalledWith({ provider: 'openai', modelId: 'gpt-3.5-turbo', usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } });
    expect(codes(r)).not.toContain('unpriced-model');
  });

  it('uses the provider instead of the bundled table', async () => {
    const r = await run({ model: claude, budget: { usd: 2 }, deps: { priceProvider: async () => undefined } });
    expectFinding(r, 'unpriced-model', { severity: 'warning' });
  });

  it('reports a price provider that throws', async () => {
    const r = await run({ model: claude, deps: { priceProvider: () => { throw new Error('no table'); } } });
    expectFinding(r, 'price-provider-failed', { severity: 'error', path: 'deps.priceProvider' });
  });
});

describe('doctor: API key', () => {
  it('reports a missing or empty key for each provider, and none for the mock', async () => {
    for (const [provider, modelId, name] of [['anthropic', 'claude-haiku-4-5', 'ANTHROPIC_API_KEY'], ['openai', 'gpt-4o', 'OPENAI_API_KEY'], ['google', 'gemini-2.5-pro', 'GEMINI_API_KEY']] as const) {
      const r = await doctor({ model: fakeModel(provider, modelId), env: { [name]: '  ' } });
      expect(expectFinding(r, 'api-key-missing', { severity: 'error' }).message).toContain(name);
    }
    expect(codes(await doctor({ model: mock(), env: {} }))).toEqual([]);
  });

  it("accepts the other usual Google variable and a provider suffix like 'openai.responses'", async () => {
    expect(codes(await doctor({ model: fakeModel('google', 'gemini-2.5-flash'), env: { GOOGLE_GENERATIVE_AI_API_KEY: 'k' } }))).toEqual([]);
    expect(codes(await doctor({ model: fakeModel('openai.responses', 'gpt-4o'), env: { OPENAI_API_KEY: 'k' } }))).not.toContain('api-key-missing');
  });

  it('looks the key up under apiKeyEnv, in env', async () => {
    const model = fakeModel('anthropic', 'claude-sonnet-4-5');
    expect(codes(await doctor({ model, apiKeyEnv: 'WORK_KEY', env: { WORK_KEY: 'k' } }))).toEqual([]);
    const r = await doctor({ model, apiKeyEnv: 'WORK_KEY', env: { ANTHROPIC_API_KEY: 'k' } });
    expect(expectFinding(r, 'api-key-missing', { path: 'apiKeyEnv' }).message).toContain('WORK_KEY');
  });

  it('reads process.env by default', async () => {
    const name = 'CAIRN_DOCTOR_TEST_KEY';
    const model = fakeModel('anthropic', 'claude-sonnet-4-5');
    vi.stubEnv(name, 'from-process');
    try {
      expect(codes(await doctor({ model, apiKeyEnv: name }))).toEqual([]);
    } finally {
      vi.unstubAllEnvs();
    }
    expect(codes(await doctor({ model, apiKeyEnv: name }))).toContain('api-key-missing');
  });

  it('reports an unknown provider as unchecked', async () => {
    expectFinding(await doctor({ model: fakeModel('acme', 'rocket-1'), env: {} }), 'api-key-unchecked', { severity: 'info' });
  });

  it("never prints the key's value", async () => {
    const secret = 'sk-ant-SECRET-value-1234567890';
    const options = {
      model: claude, env: { ANTHROPIC_API_KEY: secret, OTHER: secret }, effort: 'none', temperature: 0.2, budget: { usd: 2, unknownPrice: 'reject' },
      tools: { 'bad name': { parameters: { type: secret } } }, toolChoice: { toolName: 'nope' }, apiKeyEnv: 'OTHER_KEY', deps: { priceProvider: () => undefined },
    };
    const r = await doctor(options as DoctorOptions);
    expect(r.findings.length).toBeGreaterThan(3);
    for (const f of r.findings.filter((x) => x.path !== 'tools["bad name"].parameters.type')) expect(JSON.stringify(f)).not.toContain(secret);
    const r2 = await doctor({ model: claude, env: { ANTHROPIC_API_KEY: secret } });
    expect(JSON.stringify(r2)).not.toContain(secret);
  });
});

describe('doctor: Node version for the store', () => {
  it.each([
    ['sqlite', '18.19.0', false], ['sqlite', '21.7.3', false], ['sqlite', '20.0.0', true], ['sqlite', 'v22.13.1', true],
    ['postgres', '19.9.0', false], ['postgres', '21.1.0', true], ['memory', '18.0.0', false], ['memory', '24.0.0', true],
  ])('store %s on Node %s: ok %s', async (store, nodeVersion, ok) => {
    const r = await run({ model: mock(), store, nodeVersion });
    if (ok) expect(r.findings).toEqual([]);
    else expectFinding(r, 'node-version-unsupported', { severity: 'error', path: 'store' });
  });

  it('checks Cairn itself without a store, and skips a store object', async () => {
    expectFinding(await run({ model: mock(), nodeVersion: '18.0.0' }), 'node-version-unsupported', { path: 'nodeVersion' });
    const r = await run({ model: mock(), store: createInMemoryAgentRunStore(), nodeVersion: '20.1.0' });
    expect(r.findings).toEqual([]);
  });
});

describe('doctor: model profiles', () => {
  it('reports sampling a reasoning model refuses', async () => {
    const r = await run({ model: fakeModel('openai', 'o3-mini'), temperature: 0.2, topP: 0.9 });
    expect(r.findings.filter((f) => f.code === 'sampling-unsupported').map((f) => f.path)).toEqual(['temperature', 'topP']);
    expectFinding(await run({ model: fakeModel('openai', 'gpt-5-mini'), temperature: 1 }), 'sampling-unsupported');
  });

  it('accepts sampling on GPT-5.1 only at effort none', async () => {
    const model = fakeModel('openai', 'gpt-5.1');
    expect(codes(await run({ model, temperature: 0.3 }))).toEqual([]);
    expect(codes(await run({ model, temperature: 0.3, effort: 'none' }))).toEqual([]);
    expectFinding(await run({ model, temperature: 0.3, effort: 'high' }), 'sampling-unsupported', { path: 'temperature' });
  });

  it('reports effort for a model without effort and a level outside its list', async () => {
    expect(expectFinding(await run({ model: fakeModel('openai', 'gpt-4o'), effort: 'low' }), 'effort-unsupported').message).toContain('remove effort');
    expectFinding(await run({ model: fakeModel('openai', 'gpt-5'), effort: 'xhigh' }), 'effort-unsupported');
    expectFinding(await run({ model: fakeModel('google', 'gemini-2.5-pro'), effort: 'none' }), 'effort-unsupported');
    expect(codes(await run({ model: fakeModel('google', 'gemini-2.5-flash'), effort: 'none' }))).toEqual([]);
    expect(codes(await run({ model: fakeModel('anthropic', 'claude-opus-4-6'), effort: 'max' }))).toEqual([]);
    expectFinding(await run({ model: fakeModel('anthropic', 'claude-opus-4-5-20251101'), effort: 'max' }), 'effort-unsupported');
  });

  it('reports temperature out of range and topP out of [0, 1]', async () => {
    expectFinding(await run({ model: sonnet, temperature: 1.5 }), 'temperature-out-of-range', { path: 'temperature' });
    expect(codes(await run({ model: fakeModel('openai', 'gpt-4.1'), temperature: 1.5 }))).toEqual([]);
    expectFinding(await run({ model: fakeModel('openai', 'gpt-4.1'), temperature: 2.5 }), 'temperature-out-of-range');
    expectFinding(await run({ model: mock(), topP: 1.2 }), 'top-p-out-of-range', { path: 'topP' });
  });

  it('reports temperature and topP together on a model that takes one', async () => {
    expectFinding(await run({ model: sonnet, temperature: 0.5, topP: 0.9 }), 'sampling-conflict');
    expect(codes(await run({ model: fakeModel('anthropic', 'claude-sonnet-4-20250514'), temperature: 0.5, topP: 0.9 }))).toEqual([]);
  });

  it('warns that a model does not cache prompts', async () => {
    const r = await run({ model: fakeModel('openai', 'gpt-4o-2024-05-13'), promptCaching: true });
    expectFinding(r, 'prompt-caching-unsupported', { severity: 'warning', path: 'promptCaching' });
    expect(r.ok).toBe(true);
    expect(codes(await run({ model: claude, promptCaching: true }))).toEqual([]);
  });

  it("reports an unknown model as info, skips its profile's checks, and warns only of what no model of its provider takes", async () => {
    const r = await run({ model: fakeModel('openai', 'gpt-9-ultra'), temperature: 5, effort: 'max', topP: 0.5, budget: { usd: 1 } });
    expectFinding(r, 'model-unknown', { severity: 'info', path: 'model' });
    expect(r.findings.filter((f) => /sampling|effort|temperature/.test(f.code)).map((f) => [f.code, f.severity, f.path])).toEqual([
      ['effort-unsupported', 'warning', 'effort'], // no OpenAI model takes 'max'
      ['temperature-out-of-range', 'warning', 'temperature'], // none goes above 2
    ]);
    expect(r.ok).toBe(true);
    // What some model of the provider takes is not reported.
    expect(codes(await run({ model: fakeModel('openai', 'gpt-9-ultra'), temperature: 1, effort: 'low' }))).toEqual(['unpriced-model', 'model-unknown']);
    // A provider Cairn has no profiles for gets no guesses at all.
    expect(codes(await run({ model: fakeModel('acme', 'rocket-1'), effort: 'max', apiKeyEnv: 'K', env: { K: 'k' } }))).toEqual(['unpriced-model', 'model-unknown']);
  });

  it('lets capabilities correct or describe a model', async () => {
    const known = await run({ model: sonnet, temperature: 0.5, capabilities: { temperature: null } });
    expectFinding(known, 'sampling-unsupported');
    const described = await run({ model: fakeModel('acme', 'rocket-1'), effort: 'high', apiKeyEnv: 'K', env: { K: 'k' }, capabilities: { effort: ['low'] } });
    expectFinding(described, 'effort-unsupported');
    expect(codes(described)).not.toContain('model-unknown');
    expectFinding(await run({ model: sonnet, capabilities: { effort: ['huge'] } }), 'option-invalid', { path: 'capabilities.effort' });
  });

  it('matches model ids by family and snapshot, not by loose prefix', () => {
    expect(modelProfile('anthropic', 'claude-sonnet-4-5-20250929')?.family).toMatch(/Sonnet 4\.5/);
    expect(modelProfile('anthropic', 'claude-opus-4-1')?.family).toBe('Claude Opus 4.1');
    expect(modelProfile('anthropic', 'claude-opus-4-20250514')?.family).toBe('Claude Opus 4 / Sonnet 4');
    expect(modelProfile('anthropic', 'claude-opus-4-9')).toBeUndefined();
    expect(modelProfile('openai', 'gpt-4o-mini-2024-07-18')?.family).toBe('GPT-4o');
    expect(modelProfile('openai', 'gpt-5-chat-latest')).toBeUndefined();
    expect(modelProfile('openai', 'o4-mini')?.temperature).toBeNull();
    expect(modelProfile('google', 'models/gemini-2.5-flash-lite')?.family).toMatch(/Flash/);
    expect(modelProfile('anthropic', 'gpt-4o')).toBeUndefined();
    for (const p of MODEL_PROFILES) expect(p.source).toMatch(/^https:\/\//);
  });
});

describe('DOCTOR_CODES', () => {
  it('lists unique kebab-case codes with descriptions', () => {
    const list = DOCTOR_CODES.map((c) => c.code);
    expect(new Set(list).size).toBe(list.length);
    for (const c of DOCTOR_CODES) {
      expect(c.code).toMatch(/^[a-z]+(?:-[a-z]+)*$/);
      expect(c.description.length).toBeGreaterThan(10);
    }
  });

  it('names every code the doctor produced in this file', async () => {
    const r = await doctor({
      model: claude, env: {}, effort: 'none', temperature: 0.2, tools: { 'a b': { parameters: {} } }, toolChoice: 'any', budget: { usd: -1 },
    });
    const known = new Set<string>(DOCTOR_CODES.map((c) => c.code));
    for (const f of r.findings) expect(known.has(f.code), f.code).toBe(true);
  });
});
