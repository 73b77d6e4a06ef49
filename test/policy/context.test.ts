/**
 * createExecutionContext and .child(): options are checked, a child only
 * narrows (every widening refused with ExecutionPolicyError before any run),
 * and what a context allows is what its parent allows less what it removed.
 */
import { describe, expect, it } from 'vitest';
import { createExecutionContext, ExecutionPolicyError, InvalidOptionsError, isExecutionContext } from 'cairn/policy';

const widening = (fn: () => unknown, code = 'policy_widened') => {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(ExecutionPolicyError.isInstance(thrown)).toBe(true);
  expect((thrown as ExecutionPolicyError).code).toBe(code);
};

describe('createExecutionContext', () => {
  it('allows everything by default and holds nothing', async () => {
    const ctx = createExecutionContext();
    expect(isExecutionContext(ctx)).toBe(true);
    expect(isExecutionContext({ path: 'root' })).toBe(false);
    expect(ctx.path).toBe('root');
    expect(ctx.depth).toBe(0);
    expect(ctx.allowsModel('openai:gpt-5.2')).toBe(true);
    expect(ctx.allowsTool('anything')).toBe(true);
    expect(ctx.requiresApproval('anything')).toBe(false);
    expect(await ctx.accounting()).toEqual({
      committed: { usd: 0, tokens: 0 }, reserved: { usd: 0, tokens: 0 }, unknown: { usd: 0, tokens: 0 },
    });
  });

  it('matches models by provider:modelId, bare modelId, or provider:*', () => {
    const ctx = createExecutionContext({ allowedModels: ['openai:gpt-5.2', 'claude-opus-5', 'mock:*'] });
    expect(ctx.allowsModel({ provider: 'openai', modelId: 'gpt-5.2' })).toBe(true);
    expect(ctx.allowsModel({ provider: 'openai', modelId: 'gpt-4o' })).toBe(false);
    expect(ctx.allowsModel({ provider: 'anthropic', modelId: 'claude-opus-5' })).toBe(true);
    expect(ctx.allowsModel('mock:anything')).toBe(true);
    expect(ctx.allowsModel('google:gemini')).toBe(false);
  });

  it('holds the named tools (or all) for approval', () => {
    expect(createExecutionContext({ requireApproval: ['deploy'] }).requiresApproval('deploy')).toBe(true);
    expect(createExecutionContext({ requireApproval: ['deploy'] }).requiresApproval('read')).toBe(false);
    expect(createExecutionContext({ requireApproval: true }).requiresApproval('read')).toBe(true);
  });

  it('refuses malformed options with InvalidOptionsError', () => {
    for (const bad of [
      { allowedTools: 'search' }, { allowedModels: [''] }, { maxDepth: -1 }, { maxDepth: 1.5 }, { deadline: Number.NaN },
      { budget: { usd: -1 } }, { budget: { tokens: 0.5 } }, { budget: { unknownPrice: 'warn' } }, { prices: { m: { input: 1 } } },
      { prices: { m: { input: 1, output: 2, maxOutputTokens: 0 } } }, { prices: { m: { input: 1, output: 2, cacheRead: -1 } } },
      { bundledPrices: 'no' }, { ledger: {} }, { name: 'a/b' }, { requireApproval: 'yes' },
    ]) {
      expect(() => createExecutionContext(bad as never), JSON.stringify(bad)).toThrow(InvalidOptionsError);
    }
  });

  it('estimates a call at every byte it sends and the most it may write, or as told', () => {
    const ctx = createExecutionContext();
    // A model the context knows no output limit of: 1024 output tokens, unless the call sets its own limit.
    expect(ctx.estimate({ model: 'm', requestChars: 400, maxOutputTokens: undefined })).toEqual({ inputTokens: 400, outputTokens: 1024 });
    expect(ctx.estimate({ model: 'm', requestChars: 400, requestBytes: 600, maxOutputTokens: 50 })).toEqual({ inputTokens: 600, outputTokens: 50 });
    // A model of the bundled table: its documented output limit.
    expect(ctx.estimate({ model: 'openai:gpt-4.1', requestChars: 10, maxOutputTokens: undefined })).toEqual({ inputTokens: 10, outputTokens: 32_768 });
    expect(ctx.estimate({ model: 'anthropic:claude-sonnet-4-5-20250929', requestChars: 10, maxOutputTokens: undefined }).outputTokens).toBe(64_000);
    expect(ctx.estimate({ model: 'openai:gpt-4.1', requestChars: 10, maxOutputTokens: 500 }).outputTokens).toBe(500);
    // An override's own limit wins; an override without one keeps the table's.
    const priced = createExecutionContext({ prices: { 'openai:gpt-4.1': { input: 1, output: 4 }, 'acme:rocket': { input: 1, output: 1, maxOutputTokens: 2000 } } });
    expect(priced.estimate({ model: 'openai:gpt-4.1', requestChars: 1, maxOutputTokens: undefined }).outputTokens).toBe(32_768);
    expect(priced.estimate({ model: 'acme:rocket', requestChars: 1, maxOutputTokens: undefined }).outputTokens).toBe(2000);
    // The function sees the bytes and the limit.
    const seen: unknown[] = [];
    createExecutionContext({ budget: { estimate: (input) => (seen.push(input), { inputTokens: 0, outputTokens: 0 }) } })
      .estimate({ model: 'openai:gpt-4o', requestChars: 3, requestBytes: 5, maxOutputTokens: undefined });
    expect(seen).toEqual([{ model: 'openai:gpt-4o', requestChars: 3, requestBytes: 5, maxOutputTokens: undefined, outputLimit: 16_384 }]);
    const fixed = createExecutionContext({ budget: { estimate: { outputTokens: 7 } } });
    expect(fixed.estimate({ model: 'm', requestChars: 8, maxOutputTokens: 50 })).toEqual({ inputTokens: 8, outputTokens: 7 });
    const fn = createExecutionContext({ budget: { estimate: () => ({ inputTokens: 1.2, outputTokens: 3 }) } });
    expect(fn.estimate({ model: 'm', requestChars: 8, maxOutputTokens: undefined })).toEqual({ inputTokens: 2, outputTokens: 3 });
  });
});

describe('.child(): a child only narrows', () => {
  const parent = createExecutionContext({
    allowedModels: ['openai:*', 'mock:mock-model'],
    allowedTools: ['search', 'deploy'],
    requireApproval: ['deploy'],
    maxDepth: 2,
    deadline: 10_000,
    budget: { usd: 1, tokens: 1000 },
  });

  it('inherits the parent\'s policy and narrows what it sets', () => {
    const child = parent.child({ name: 'research', allowedTools: ['search'], allowedModels: ['openai:gpt-5.2'], deadline: 5000, budget: { usd: 0.25 } });
    expect(child.path).toBe('root/research');
    expect(child.depth).toBe(1);
    expect(child.parent).toBe(parent);
    expect(child.ledger).toBe(parent.ledger);
    expect(child.allowsTool('deploy')).toBe(false);
    expect(child.allowsTool('search')).toBe(true);
    expect(child.allowsModel('openai:gpt-5.2')).toBe(true);
    expect(child.allowsModel('openai:gpt-4o')).toBe(false);
    expect(child.requiresApproval('deploy')).toBe(true);
    expect(child.policy.deadline).toBe(5000);
    expect(child.policy.maxDepth).toBe(1);
    // Both ceilings hold for the child's calls: the parent's and its own.
    expect(child.policy.ceilings).toEqual([{ scope: 'root', usd: 1, tokens: 1000 }, { scope: 'root/research', usd: 0.25 }]);
    expect(parent.child().path).toBe('root/c2');
  });

  it('refuses every widening with ExecutionPolicyError policy_widened', () => {
    widening(() => parent.child({ allowedTools: ['search', 'shell'] }));
    widening(() => parent.child({ allowedModels: ['anthropic:claude-opus-5'] }));
    widening(() => parent.child({ allowedModels: ['openai:*', 'mock:*'] }));
    widening(() => parent.child({ requireApproval: false }));
    widening(() => parent.child({ deadline: 20_000 }));
    widening(() => parent.child({ maxDepth: 2 }));
    widening(() => parent.child({ budget: { usd: 2 } }));
    widening(() => parent.child({ budget: { tokens: 1001 } }));
    widening(() => parent.child({ ledger: parent.ledger } as never));
    widening(() => parent.child({ prices: {} } as never));
    widening(() => createExecutionContext({ requireApproval: true }).child({ requireApproval: ['deploy'] }));
    widening(() => createExecutionContext({ budget: { unknownPrice: 'reject' } }).child({ budget: { unknownPrice: 'hold' } }));
    // Unset is 'reject': holding is the root's choice to make.
    widening(() => createExecutionContext({ budget: { usd: 1 } }).child({ budget: { unknownPrice: 'hold' } }));
    widening(() => parent.child({ bundledPrices: false } as never));
    expect(createExecutionContext({ budget: { unknownPrice: 'hold' } }).child({ budget: { unknownPrice: 'reject' } }).budget.unknownPrice).toBe('reject');
    // A grandchild is held to the child, not to the root.
    widening(() => parent.child({ budget: { usd: 0.5 } }).child({ budget: { usd: 0.75 } }));
  });

  it('refuses a child past the maximum depth', () => {
    const leaf = parent.child().child();
    expect(leaf.depth).toBe(2);
    widening(() => leaf.child(), 'max_depth_exceeded');
    widening(() => createExecutionContext({ maxDepth: 0 }).child(), 'max_depth_exceeded');
  });

  it('may add approvals (a child\'s list adds to its parent\'s) and narrow to a subset', () => {
    expect(parent.child({ requireApproval: [] }).requiresApproval('deploy')).toBe(true);
    const child = parent.child({ requireApproval: ['search'] });
    expect(child.requiresApproval('search')).toBe(true);
    expect(child.requiresApproval('deploy')).toBe(true);
    expect(parent.child({ requireApproval: true }).requiresApproval('search')).toBe(true);
    expect(parent.child({ allowedModels: ['mock:mock-model'] }).allowsModel('mock:mock-model')).toBe(true);
  });
});
