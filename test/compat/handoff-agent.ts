/**
 * The agents behind the handoff records of the compatibility corpus
 * (corpus/handoff-v<N>/): a triage agent (the run's own) that hands off to a
 * billing agent with a refund that needs approval and an idempotent lookup.
 * The generator (generate-handoff.ts) ran them once; the test (handoff.test.ts)
 * resumes the frozen records with the same definitions, so a resume checks
 * the binding the records were written under, its `handoffs` key included.
 *
 * Changing anything that goes into the binding (either agent's model id,
 * instructions, a tool's schema, the names) makes every frozen record refuse
 * to resume: add a case only under a new bindingId and a new folder.
 */
import type { AgentOptions, AgentTool } from 'cairn/agent';
import { createMockModel, type MockResponse } from 'cairn/testing';
import { WRITTEN_AT } from './corpus-agent.js';

export const HANDOFF_BINDING_ID = 'cairn-compat-handoff-1';
export const HANDOFF_SCOPE = 'tenant-corpus';

export interface HandoffEffects {
  refunds: string[];
  lookups: string[];
}

export interface HandoffLegOptions {
  effects: HandoffEffects;
  runId: string;
  store: NonNullable<AgentOptions['session']>['store'];
  /** This leg's script of the triage model and of the billing model (strict: an unexpected call fails the leg). */
  triage: MockResponse[];
  billing: MockResponse[];
  now?: number;
  idPrefix?: string;
}

const order = { type: 'object', properties: { order: { type: 'string' } }, required: ['order'], additionalProperties: false };

export function handoffLeg(o: HandoffLegOptions): AgentOptions & { session: NonNullable<AgentOptions['session']> } {
  let counter = 0;
  const refund: AgentTool = {
    description: 'Refund an order.', parameters: order, needsApproval: true,
    execute: async ({ order: id }: { order: string }) => {
      o.effects.refunds.push(id);
      return { refunded: id };
    },
  };
  const lookup: AgentTool = {
    description: 'Look an order up.', parameters: order, replay: 'idempotent',
    execute: async ({ order: id }: { order: string }) => {
      o.effects.lookups.push(id);
      return { order: id, totalCents: 4200 };
    },
  };
  return {
    name: 'triage',
    bindingId: HANDOFF_BINDING_ID,
    model: createMockModel({ modelId: 'corpus-triage', responses: o.triage }),
    instructions: 'You are triage. Hand billing questions to billing.',
    prompt: 'Refund order 7, please.',
    maxRetries: 0,
    handoffs: [{
      name: 'billing',
      handoffDescription: 'Refunds and invoices.',
      model: createMockModel({ modelId: 'corpus-billing', responses: o.billing }),
      instructions: 'You are billing. Look the order up, then refund it.',
      tools: { refund, lookup },
      maxRetries: 0,
    }],
    session: { store: o.store, runId: o.runId, scope: HANDOFF_SCOPE },
    deps: { clock: { now: () => o.now ?? WRITTEN_AT }, generateId: () => `${o.idPrefix ?? 'corpus'}-${++counter}` },
  };
}

/** The turns of the corpus runs. */
export const TURNS = {
  transfer: { toolCalls: [{ toolCallId: 'h1', toolName: 'transfer_to_billing', args: {} }] },
  lookup: { toolCalls: [{ toolCallId: 'l1', toolName: 'lookup', args: { order: '7' } }] },
  refund: { toolCalls: [{ toolCallId: 'r1', toolName: 'refund', args: { order: '7' } }] },
  done: { text: 'Order 7 is refunded.' },
  down: { error: { status: 503, message: 'billing model unavailable' } },
} satisfies Record<string, MockResponse>;
