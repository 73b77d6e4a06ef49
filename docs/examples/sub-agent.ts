// Sub-agents: a lead agent delegates research to a researcher agent through agentTool. The researcher's lookup
// needs approval: the lead's run suspends with the child's pending approval, and the lead's resume settles it.
// Scripted models, no API key.
import { Agent, agentTool, tool } from 'cairn';
import { createInMemoryAgentRunStore } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { z } from 'zod';

const lookups: string[] = [];
const lookup = tool({
  name: 'lookup',
  description: 'Look a fact up in the archive.',
  schema: z.object({ topic: z.string() }),
  requiresApproval: true,
  execute: async ({ topic }) => {
    lookups.push(topic);
    return `The archive says: ${topic} follow the moon.`;
  },
});

const researcher = new Agent({
  name: 'researcher',
  instructions: 'Answer with facts from the archive.',
  model: createMockModel({ modelId: 'researcher', responses: [
    { toolCalls: [{ toolName: 'lookup', args: { topic: 'tides' } }] },
    { text: 'Tides follow the moon.' },
  ] }),
  tools: [lookup],
});

const leadModel = createMockModel({ modelId: 'lead', responses: [
  { toolCalls: [{ toolName: 'research', args: { input: 'Why are there tides?' } }] },
  { text: 'Tides come from the moon, says the researcher.' },
] });
const lead = new Agent({
  name: 'lead',
  instructions: 'Delegate research, then answer.',
  model: leadModel,
  tools: [agentTool(researcher, { name: 'research', description: 'Finds facts in the archive.' })],
});

// The parent's model sees the sub-agent as a tool that takes one task in words.
const store = createInMemoryAgentRunStore();
const first = await lead.run({ prompt: 'Explain tides.', store, runId: 'lead-1' });
console.log('the lead was offered:', JSON.stringify(leadModel.calls[0]!.tools!.map((t) => [t.name, t.parameters])));
console.log('lead:', first.status);

// The child's approval is the root's: it is listed with the child's run id, and nothing ran yet.
const [pending] = first.pendingApprovals;
console.log('pending:', pending!.toolName, JSON.stringify(pending!.args), '| from the child run:', (await store.load('lead-1'))!.pendingApprovals[0]!.runId !== undefined);
console.log('lookups so far:', lookups.length);

// The child is a normal durable run in the same store, naming its parent.
const childId = (await store.load('lead-1'))!.pendingApprovals[0]!.runId!;
const child = await store.load(childId);
console.log('child:', child!.status, '| parent:', child!.binding.parent!.runId, '| depth:', child!.binding.parent!.depth);

// The root's resume reaches the child, which runs the lookup once and answers; then the lead answers.
const done = await lead.run({ runId: 'lead-1', store, approvalResponses: [{ approvalId: pending!.approvalId, approved: true, token: pending!.token }] });
console.log('lead:', done.status, '-', done.outputText);
console.log('lookups:', lookups.join(', '), '| child:', (await store.load(childId))!.status);
const call = Object.values((await store.load('lead-1'))!.receipts)[0]!;
console.log('the lead\'s receipt:', call.toolName, call.status, JSON.stringify(call.rawResult), `idempotent: ${call.idempotent}`);
