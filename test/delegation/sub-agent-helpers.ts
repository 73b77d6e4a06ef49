/**
 * Worlds for the sub-agent tests: a lead agent that delegates to a
 * researcher (which calls a tool, maybe one that needs approval), on the
 * in-memory store or on SQLite, with every effect logged.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { Agent, agentTool, tool } from 'cairn';
import { createInMemoryAgentRunStore, type AgentRunStore } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createMockModel } from 'cairn/testing';

export interface StoreCase {
  name: string;
  open(): { store: AgentRunStore; reopen(): AgentRunStore; close(): void };
}

export const STORES: StoreCase[] = [
  {
    name: 'in-memory',
    open() {
      const store = createInMemoryAgentRunStore();
      return { store, reopen: () => store, close: () => undefined };
    },
  },
  {
    name: 'sqlite',
    open() {
      const dir = mkdtempSync(join(tmpdir(), 'cairn-sub-'));
      const path = join(dir, 'runs.db');
      const opened: { close(): void }[] = [];
      const at = () => {
        const ops = createSqliteOpsStore({ path });
        opened.push(ops as unknown as { close(): void });
        return ops.agentRuns;
      };
      const store = at();
      return {
        store,
        reopen: at,
        close: () => {
          for (const o of opened) (o as { close?: () => void }).close?.();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
];

export interface World {
  effects: string[];
  researcher(model: ReturnType<typeof createMockModel>): Agent;
  lead(model: ReturnType<typeof createMockModel>, researcher: Agent): Agent;
}

/** `lookup` records each effect; with `gated`, it needs approval. */
export function world(options: { gated?: boolean; crashOnce?: boolean } = {}): World {
  const effects: string[] = [];
  let crashed = false;
  const lookup = tool({
    name: 'lookup',
    description: 'Looks a fact up.',
    schema: z.object({ q: z.string() }),
    ...(options.gated ? { requiresApproval: true } : {}),
    execute: async ({ q }) => {
      effects.push(q);
      if (options.crashOnce && !crashed) {
        crashed = true;
        throw Object.assign(new Error('the process died'), { simulatedCrash: true });
      }
      return `fact about ${q}`;
    },
  });
  return {
    effects,
    researcher: (model) => new Agent({ name: 'researcher', model, instructions: 'Find facts.', maxSteps: 4, tools: [lookup] }),
    lead: (model, researcher) => new Agent({
      name: 'lead', model, instructions: 'Delegate research.', maxSteps: 4,
      tools: [agentTool(researcher, { name: 'research', description: 'Finds facts.' })],
    }),
  };
}

/** The researcher's script: one lookup, then its answer. */
export const researcherScript = () => createMockModel({ responses: [
  { toolCalls: [{ toolName: 'lookup', args: { q: 'tides' } }] },
  { text: 'Tides follow the moon.' },
] });
/** The lead's script: one delegation, then its answer. */
export const leadScript = () => createMockModel({ responses: [
  { toolCalls: [{ toolName: 'research', args: { input: 'Why are there tides?' } }] },
  { text: 'Because of the moon.' },
] });
