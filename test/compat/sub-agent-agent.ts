/**
 * The agents behind the sub-agent records of the compatibility corpus
 * (corpus/sub-agent-v3/, written by generate-sub-agent.ts): a lead that
 * delegates to a researcher whose archive lookup needs approval. The test
 * (sub-agent.test.ts) resumes the records with these same definitions, so
 * the resume checks the bindings the records were written under, the root's
 * and the child's. Change nothing that goes into a binding: add a case under
 * new binding ids and a new folder instead.
 */
import { Agent, agentTool, tool } from 'cairn';
import { createMockModel } from 'cairn/testing';
import { z } from 'zod';

export const SUB_AGENT_SCOPE = 'tenant-corpus';
export const SUB_AGENT_ROOT_ID = 'corpus-sub-agent';
/** The fixed time of the generator's clock (2026-01-01T00:00:00Z). */
export const WRITTEN_AT = 1_767_225_600_000;

type Script = Parameters<typeof createMockModel>[0]['responses'];

export function subAgentAgents(scripts: { lead: Script; researcher: Script }, effects: string[]) {
  let id = 0;
  const deps = { clock: { now: () => WRITTEN_AT }, generateId: () => `id-${++id}` };
  const archive = tool({
    name: 'archive',
    description: 'Look a fact up in the archive.',
    schema: z.object({ topic: z.string() }),
    requiresApproval: true,
    execute: ({ topic }) => {
      effects.push(topic);
      return `archived ${topic}`;
    },
  });
  const researcher = new Agent({
    name: 'researcher', bindingId: 'cairn-compat-sub-agent-researcher-1', instructions: 'Find facts.', maxSteps: 4, deps,
    model: createMockModel({ modelId: 'corpus-researcher', responses: scripts.researcher }), tools: [archive],
  });
  return new Agent({
    name: 'lead', bindingId: 'cairn-compat-sub-agent-lead-1', instructions: 'Delegate research.', maxSteps: 4, deps,
    model: createMockModel({ modelId: 'corpus-lead', responses: scripts.lead }),
    tools: [agentTool(researcher, { name: 'research', description: 'Finds facts.' })],
  });
}

/** The first leg's scripts: the lead delegates, the researcher asks for the lookup. */
export const FIRST_LEG = {
  lead: [{ toolCalls: [{ toolCallId: 'call-research', toolName: 'research', args: { input: 'Why tides?' } }] }],
  researcher: [{ toolCalls: [{ toolCallId: 'call-archive', toolName: 'archive', args: { topic: 'tides' } }] }],
};
/** What the models say once the lookup is approved. */
export const SECOND_LEG = {
  lead: [{ text: 'Because of the moon.' }],
  researcher: [{ text: 'Tides follow the moon.' }],
};
