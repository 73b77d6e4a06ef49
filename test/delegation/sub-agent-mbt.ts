/**
 * The sub-agent paths of the tool-call chart (machines/sub-agent.ts), each a
 * world driven through the real runtime: the edges it must take, and the
 * drive. test/machines/model-based.test.ts runs them under its recorder, so
 * they count toward the chart's coverage; the edges no caller can take are
 * listed with their reasons in SUB_AGENT_UNREACHABLE.
 */
import { expect } from 'vitest';
import { Agent, agentTool } from 'cairn';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentOptions, type AgentTool, type ResumeOptions } from 'cairn/agent';
import { createCrashPlan, createMockModel } from 'cairn/testing';

export interface SubAgentPath {
  name: string;
  /** Edge keys of the tool-call chart the drive must take. */
  takes: string[];
  drive(): Promise<void>;
}

const E = {
  toDelegation: 'toolCall.effectIdentity.writingReceipt|xstate.done.actor.writeReceipt|2',
  suspended: 'toolCall.delegation.runningChild|xstate.done.actor.runChild|0',
  reconcile: 'toolCall.delegation.runningChild|xstate.done.actor.runChild|1',
  answerCompleted: 'toolCall.delegation.runningChild|xstate.done.actor.runChild|2',
  answerCheckpoint: 'toolCall.delegation.runningChild|xstate.done.actor.runChild|3',
  answerProjecting: 'toolCall.delegation.runningChild|xstate.done.actor.runChild|4',
  answerRecording: 'toolCall.delegation.runningChild|xstate.done.actor.runChild|5',
  recheckSuspended: 'toolCall.delegation.childSuspended|RECHECK|0',
  recheckReconcile: 'toolCall.delegation.childNeedsReconciliation|RECHECK|0',
};

export const SUB_AGENT_UNREACHABLE: Record<string, string> = {
  'toolCall.delegation.runningChild|xstate.error.actor.runChild|0':
    'runChild answers every outcome of its child as data (src/delegation/agent-tool-run.ts): a refused execution context, a depth past maxDepth and a failed or stopped child are `threw`, and the engine it drives never rejects',
};

const schema = { type: 'object', properties: {}, additionalProperties: false };
const ask = (id = 'r1') => ({ toolCallId: id, toolName: 'research', args: { input: 'Why tides?' } });

function child(model = createMockModel({ responses: [{ text: 'The moon.' }] }), tools: Record<string, AgentTool> = {}) {
  return new Agent({ name: 'researcher', model, maxSteps: 3, tools });
}

function rootOptions(research: Agent, lead: ReturnType<typeof createMockModel>, extra: Partial<AgentOptions> = {}): AgentOptions {
  return { model: lead, prompt: 'Explain tides.', maxSteps: 3, tools: { research: agentTool(research, { name: 'research' }) }, ...extra };
}
const session = (store = createInMemoryAgentRunStore(), runId = 'mbt-sub') => ({ store, runId, scope: 'default' });

export const SUB_AGENT_PATHS: SubAgentPath[] = [
  {
    name: 'a lone call: the executing receipt, the child answers, the run\'s step checkpoint commits it',
    takes: [E.toDelegation, E.answerCompleted],
    drive: async () => {
      const result = await runAgent(rootOptions(child(), createMockModel({ responses: [{ toolCalls: [ask()] }, { text: 'Because of the moon.' }] }), { session: session() }));
      expect(result).toMatchObject({ status: 'completed', text: 'Because of the moon.' });
    },
  },
  {
    name: 'two calls in a batch: the child\'s answer goes to the call\'s own checkpoint',
    takes: [E.toDelegation, E.answerCheckpoint],
    drive: async () => {
      const note: AgentTool = { parameters: schema, execute: () => 'noted' };
      const lead = createMockModel({ responses: [{ toolCalls: [ask(), { toolCallId: 'n1', toolName: 'note', args: {} }] }, { text: 'Done.' }] });
      const options = rootOptions(child(), lead, { session: session() });
      const result = await runAgent({ ...options, tools: { ...options.tools, note } });
      expect(result.status).toBe('completed');
    },
  },
  {
    name: 'with onToolResult: the child\'s answer is committed as a raw result, then projected',
    takes: [E.toDelegation, E.answerRecording],
    drive: async () => {
      const lead = createMockModel({ responses: [{ toolCalls: [ask()] }, { text: 'Done.' }] });
      const result = await runAgent(rootOptions(child(), lead, { session: session(), onToolResult: ({ output }) => `seen: ${String(output)}` }));
      expect(result.status).toBe('completed');
      expect(lead.calls[1]!.messages.at(-1)).toMatchObject({ role: 'tool', content: 'seen: The moon.' });
    },
  },
  {
    name: 'without a store, with onToolResult: the receipt write saves nothing, the answer is projected at once',
    takes: [E.toDelegation, E.answerProjecting],
    drive: async () => {
      const lead = createMockModel({ responses: [{ toolCalls: [ask()] }, { text: 'Done.' }] });
      const result = await runAgent(rootOptions(child(), lead, { onToolResult: ({ output }) => output }));
      expect(result.status).toBe('completed');
    },
  },
  {
    name: 'without a store, with an abort signal: through admission and the receipt write into the child',
    takes: [E.toDelegation, E.answerCompleted],
    drive: async () => {
      const lead = createMockModel({ responses: [{ toolCalls: [ask()] }, { text: 'Done.' }] });
      const result = await runAgent(rootOptions(child(), lead, { abortSignal: new AbortController().signal }));
      expect(result.status).toBe('completed');
    },
  },
  {
    name: 'the child suspends on an approval: the call rests in childSuspended; the resume drives the child again',
    takes: [E.toDelegation, E.suspended, E.recheckSuspended, E.answerCompleted],
    drive: async () => {
      const gated: AgentTool = { parameters: schema, needsApproval: true, execute: () => 'looked' };
      const s = session();
      const childModel = () => createMockModel({ strict: false, responses: [(r: { messages: { role: string }[] }) =>
        (r.messages.some((m) => m.role === 'tool') ? { text: 'The moon.' } : { toolCalls: [{ toolCallId: 'l1', toolName: 'lookup', args: {} }] })] });
      const leadModel = () => createMockModel({ strict: false, responses: [(r: { messages: { role: string }[] }) =>
        (r.messages.some((m) => m.role === 'tool') ? { text: 'Done.' } : { toolCalls: [ask()] })] });
      const first = await runAgent(rootOptions(child(childModel(), { lookup: gated }), leadModel(), { session: s }));
      expect(first.status).toBe('suspended');
      const [pending] = first.status === 'suspended' ? first.pendingApprovals : [];
      const second = await resumeAgent({
        ...rootOptions(child(childModel(), { lookup: gated }), leadModel(), { session: s }), session: s,
        approvalResponses: [{ approvalId: pending!.approvalId, approved: true, token: pending!.token }],
      });
      expect(second.status).toBe('completed');
    },
  },
  {
    name: 'the child\'s tool was cut off: the call rests in childNeedsReconciliation; the operator\'s answer reaches the child',
    takes: [E.reconcile, E.recheckReconcile, E.answerCompleted],
    drive: async () => {
      const s = session();
      const world = (plan: ReturnType<typeof createCrashPlan>): ResumeOptions => {
        const lookup = plan.wrapTools({ lookup: { parameters: schema, execute: () => 'looked' } as AgentTool });
        const childModel = createMockModel({ strict: false, responses: [(r: { messages: { role: string }[] }) =>
          (r.messages.some((m) => m.role === 'tool') ? { text: 'The moon.' } : { toolCalls: [{ toolCallId: 'l1', toolName: 'lookup', args: {} }] })] });
        const leadModel = createMockModel({ strict: false, responses: [(r: { messages: { role: string }[] }) =>
          (r.messages.some((m) => m.role === 'tool') ? { text: 'Done.' } : { toolCalls: [ask()] })] });
        return { ...rootOptions(child(childModel, lookup), leadModel), session: { ...s, store: plan.wrapStore(s.store) } };
      };
      const crash = createCrashPlan({ at: { kind: 'tool', index: 1, when: 'after' } });
      expect(await crash.race(runAgent(world(crash)))).toEqual({ crashed: true });
      const stopped = await resumeAgent(world(createCrashPlan()));
      expect(stopped).toMatchObject({ status: 'stopped', reason: 'tool-reconciliation-required' });
      const effect = stopped.status === 'stopped' ? stopped.unknownEffects![0]! : undefined;
      expect(effect).toMatchObject({ toolCallId: 'l1', runId: expect.stringMatching(/^sub_/) });
      const done = await resumeAgent({ ...world(createCrashPlan()), reconciledToolResults: [{ toolCallId: 'l1', output: 'looked' }] });
      expect(done.status).toBe('completed');
    },
  },
];
