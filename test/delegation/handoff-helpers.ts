/** What the handoff tests share: a triage agent that hands off to billing, on a store of the test's choosing. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInMemoryAgentRunStore, type AgentOptions, type AgentRunStore, type HandoffAgentOptions } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createMockModel } from 'cairn/testing';

export type MockResponses = Parameters<typeof createMockModel>[0]['responses'];

export interface StoreKind {
  name: string;
  open(): { store: AgentRunStore; close(): void };
}

export const STORES: StoreKind[] = [
  { name: 'in-memory', open: () => ({ store: createInMemoryAgentRunStore(), close: () => undefined }) },
  {
    name: 'sqlite',
    open: () => {
      const dir = mkdtempSync(join(tmpdir(), 'cairn-handoff-'));
      const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
      return { store: ops.agentRuns, close: () => { ops.close(); rmSync(dir, { recursive: true, force: true }); } };
    },
  },
];

/** The effects the billing tools had, by tool. */
export interface Effects { refunds: string[]; lookups: string[] }

/** billing: its own model, instructions and tools (refund needs approval; lookup is idempotent). */
export function billingAgent(model: ReturnType<typeof createMockModel>, effects: Effects, over: Partial<HandoffAgentOptions> = {}): HandoffAgentOptions {
  return {
    name: 'billing',
    handoffDescription: 'Refunds and invoices.',
    model,
    instructions: 'You are billing. Refund when asked.',
    tools: {
      refund: {
        description: 'Refund an order.',
        parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'], additionalProperties: false },
        needsApproval: true,
        execute: async ({ order }: { order: string }) => {
          effects.refunds.push(order);
          return { refunded: order };
        },
      },
      lookup: {
        description: 'Look an order up.',
        parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'], additionalProperties: false },
        replay: 'idempotent',
        execute: async ({ order }: { order: string }) => {
          effects.lookups.push(order);
          return { order, total: 42 };
        },
      },
    },
    ...over,
  };
}

/** triage: the run's own agent, with a tool billing does not have. */
export function triageOptions(model: ReturnType<typeof createMockModel>, billing: HandoffAgentOptions, over: Partial<AgentOptions> = {}): AgentOptions {
  return {
    name: 'triage',
    model,
    instructions: 'You are triage. Hand billing questions to billing.',
    prompt: 'Refund order o-1, please.',
    tools: {
      faq: {
        description: 'Answer from the FAQ.',
        parameters: { type: 'object', properties: {}, additionalProperties: false },
        execute: async () => 'See the FAQ.',
      },
    },
    handoffs: [billing],
    ...over,
  };
}

export const transfer = (id = 't1') => ({ toolCalls: [{ toolCallId: id, toolName: 'transfer_to_billing', args: {} }] });
