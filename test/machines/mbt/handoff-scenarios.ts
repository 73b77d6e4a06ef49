/**
 * The run machine's handoff (machines/run-handoff.ts): a step whose calls
 * completed a transfer goes through `handingOff` (the target put in place),
 * then the step's checkpoint, and the target's model answers; without a
 * store the step goes straight on; a target that suspends at an approval is
 * resumed by a new process with the target. Joined to RUN_SCENARIOS, so they
 * count toward the run chart's coverage.
 */
import { expect } from 'vitest';
import { createMockModel } from 'cairn/testing';
import type { AgentOptions, AgentTool } from 'cairn/agent';
import type { RunInput } from '../../../machines/index.js';
import type { RunScenario } from './run-scenarios.js';
import { ev, RESTORE, type RunModelEvent } from './run-model.js';

const S = ev.saved;
const transfer = { toolCallId: 't1', toolName: 'transfer_to_billing', args: {} };
const publish = { toolCallId: 'p1', toolName: 'publish', args: {} };
const lookup: AgentTool = { description: 'Look a fact up.', parameters: { type: 'object', properties: {} }, execute: () => ({ answer: 42 }) };
const handoffInput: Partial<RunInput> = { toolNames: ['transfer_to_billing'], handoffs: { transfer_to_billing: 'billing' } };
const handedOff = (durable: boolean, toolNames = ['lookup']): RunModelEvent => ({
  type: 'xstate.done.actor.enterHandoff',
  output: { toolNames, plan: { durable, policy: false, calls: {} } },
});
const toBilling = [S('saveStart'), ev.turn(0, { toolCalls: [transfer] }), ev.callEnded('call-0-0', { toolCallId: 't1', toolName: 'transfer_to_billing' })];

/** triage hands off at once; billing answers from `billing`'s script. */
const options = (billing: ReturnType<typeof createMockModel>): Pick<AgentOptions, 'name' | 'model' | 'prompt' | 'handoffs'> => ({
  name: 'triage',
  prompt: 'Refund o-1.',
  model: createMockModel({ modelId: 'triage', responses: [{ toolCalls: [transfer] }] }),
  handoffs: [{ name: 'billing', model: billing, instructions: 'You are billing.', tools: { lookup } }],
});

export const HANDOFF_SCENARIOS: RunScenario[] = [
  {
    name: 'handoff: a transfer completes → handingOff → the step\'s checkpoint → the target answers → completed',
    input: handoffInput,
    path: [...toBilling, handedOff(true), S('saveStep'), ev.turn(1, { text: 'Billing here.' })],
    drive: async (h) => {
      const billing = createMockModel({ modelId: 'billing', responses: [{ text: 'Billing here.' }] });
      await h.start({ ...h.base(), ...options(billing) });
      expect(billing.calls[0]!.tools!.map((t) => t.name)).toEqual(['lookup']);
    },
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'completed', output: 'Billing here.' });
      expect(run.store.last()).toMatchObject({ activeAgent: 'billing' });
    },
  },
  {
    name: 'handoff without a store: handingOff → the next model call at once → completed',
    input: { ...handoffInput, plan: { durable: false, policy: false, calls: {} } },
    path: [...toBilling, handedOff(false), ev.turn(1, { text: 'Billing here.' })],
    drive: async (h) => {
      const { session: _session, ...rest } = h.base();
      await h.start({ ...rest, ...options(createMockModel({ modelId: 'billing', responses: [{ text: 'Billing here.' }] })) });
      expect(h.store.saved).toHaveLength(0);
    },
    check: (run) => expect(run.last).toMatchObject({ status: 'completed', output: 'Billing here.' }),
  },
  {
    name: 'handoff: the target suspends at an approval → a new process resumes it with the target → completed',
    input: handoffInput,
    path: [
      ...toBilling, handedOff(true, ['publish']), S('saveStep'), ev.turn(1, { toolCalls: [publish] }),
      ev.toCall('call-1-0', { type: 'xstate.done.actor.guardCall', output: { kind: 'allow' } }),
      ev.toCall('call-1-0', { type: 'xstate.done.actor.checkArguments', output: { kind: 'valid' } }),
      ev.toCall('call-1-0', { type: 'xstate.done.actor.decideApproval', output: { kind: 'wait' } }),
      ev.toCall('call-1-0', { type: 'xstate.done.actor.issueApproval', output: { approvalId: 'p1@approval', token: 'token-1', client: false } }),
      S('saveSuspension'),
      RESTORE, ev.restored(), S('saveSuspension'), ev.resume({ 'call-1-0': { verdict: { approved: true } } }),
      ev.callEnded('call-1-0', { toolCallId: 'p1', toolName: 'publish', modelStep: 1 }), S('saveStep'), ev.turn(2, { text: 'Published.' }),
    ],
    drive: async (h) => {
      let published = 0;
      const target = (model: ReturnType<typeof createMockModel>) => ({
        ...options(model),
        handoffs: [{ name: 'billing', model, instructions: 'You are billing.', tools: { publish: { ...lookup, needsApproval: true, execute: () => ++published } } }],
      });
      const first = await h.start({ ...h.base(), ...target(createMockModel({ modelId: 'billing', responses: [{ toolCalls: [publish] }] })) });
      expect(first.result.status).toBe('suspended');
      if (first.result.status !== 'suspended') return;
      const approvalResponses = first.result.pendingApprovals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: true }));
      const billing = createMockModel({ modelId: 'billing', responses: [{ text: 'Published.' }] });
      await h.resume({ ...h.base(), ...target(billing), model: createMockModel({ modelId: 'triage', responses: [] }), approvalResponses });
      expect(published).toBe(1);
      expect(billing.calls[0]!.messages[0]).toEqual({ role: 'system', content: 'You are billing.' });
    },
    check: (run) => expect(run.last).toMatchObject({ status: 'completed', output: 'Published.' }),
  },
];
