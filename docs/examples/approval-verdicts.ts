// A verdict needs the token the run issued, answers its call once, and may not contradict itself; a denial is final.
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentResult } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const published: string[] = [];
let asked = 0;
const options = {
  model: createMockModel({
    responses: [
      { toolCalls: [{ toolName: 'publish', args: { slug: 'notes' } }] },
      { toolCalls: [{ toolName: 'publish', args: { slug: 'draft' } }] },
      { text: 'The notes are live; the draft stays private.' },
    ],
  }),
  prompt: 'Publish the notes and the draft.',
  session: { store: createInMemoryAgentRunStore(), runId: 'publish-9', scope: 'tenant-a' },
  tools: {
    publish: {
      parameters: { type: 'object' as const, properties: { slug: { type: 'string' } }, required: ['slug'] },
      // Holds each call when it is dispatched; asked on the resume, it would say "not needed".
      needsApproval: () => ++asked <= 2,
      execute: ({ slug }: { slug: string }) => {
        published.push(slug);
        return `published ${slug}`;
      },
    },
  },
};
const show = (label: string, r: AgentResult) =>
  console.log(`${label}: ${r.status}${r.status === 'failed' ? ` (${r.error.name}, ${r.error.code})` : ''}${r.warnings.map((w) => `\n  warning: ${w.message}`).join('')}`);

const first = await runAgent(options);
if (first.status !== 'suspended') throw new Error(first.status);
const notes = first.pendingApprovals[0]!;

// The approvalId alone is predictable: without the token, a verdict decides nothing.
show('no token', await resumeAgent({ ...options, approvalResponses: [{ approvalId: notes.approvalId, approved: true }] }));

// Approve and deny of one approval in one resume: refused, nothing written.
show('both verdicts', await resumeAgent({
  ...options,
  approvalResponses: [
    { approvalId: notes.approvalId, token: notes.token, approved: true },
    { approvalId: notes.approvalId, token: notes.token, approved: false },
  ],
}));

const verdict = { approvalId: notes.approvalId, token: notes.token, approved: true };
const second = await resumeAgent({ ...options, approvalResponses: [verdict] });
show('approved', second);
if (second.status !== 'suspended') throw new Error(second.status);

// The token was used: replayed, the verdict approves nothing else.
show('replayed', await resumeAgent({ ...options, approvalResponses: [verdict] }));

// A denial is final: the predicate would no longer hold the call, and still it does not run.
const draft = second.pendingApprovals[0]!;
const done = await resumeAgent({
  ...options, approvalResponses: [{ approvalId: draft.approvalId, token: draft.token, approved: false, reason: 'Not ready.' }],
});
show('denied', done);
console.log(`${done.text} Published: ${published.join(', ')}.`);
