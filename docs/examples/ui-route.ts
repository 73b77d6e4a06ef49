import {
  createInMemoryAgentRunStore, resumeStreamAgent, streamAgent, type AgentTools, type ApprovalResponse, type ClientToolResult,
} from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import {
  agentStateFromParts, createInMemoryAgentStreamJournal, resumeAgentStreamResponse, toAgentStreamResponse,
} from 'cairn/ui';

const runs = createInMemoryAgentRunStore();
const journal = createInMemoryAgentStreamJournal();
const tools: AgentTools = {
  publish: {
    description: 'Publish a page.',
    parameters: { type: 'object', properties: { slug: { type: 'string' } }, required: ['slug'] },
    needsApproval: true,
    execute: ({ slug }: { slug: string }) => `published ${slug}`,
  },
  // No execute: the page answers this one.
  pickColor: { description: 'Ask the reader for a colour.', parameters: { type: 'object', properties: {} } },
};
const model = createMockModel({
  responses: [
    { toolCalls: [{ toolName: 'publish', args: { slug: 'notes' } }, { toolName: 'pickColor' }] },
    { text: 'Published, with a teal banner.' },
  ],
});
const options = { model, tools, bindingId: 'notes-v1' };
interface RouteBody { prompt?: string; runId?: string; approvalResponses?: ApprovalResponse[]; clientToolResults?: ClientToolResult[] }

// The native route. The scope comes from who is signed in; here, one tenant.
async function route(request: Request): Promise<Response> {
  const scope = 'tenant-a';
  if (request.method === 'GET') {
    const runId = new URL(request.url).searchParams.get('runId') ?? '';
    return resumeAgentStreamResponse({ store: journal, streamId: runId, scope, request });
  }
  const body = (await request.json()) as RouteBody;
  if (typeof body.runId === 'string') {
    // A resume carries a verdict for every pending approval and a result for every pending client call.
    const stream = resumeStreamAgent({
      ...options,
      session: { store: runs, runId: body.runId, scope },
      approvalResponses: body.approvalResponses,
      clientToolResults: body.clientToolResults,
    });
    return toAgentStreamResponse(stream, { runId: body.runId, store: journal, scope });
  }
  const runId = 'run-1';
  const stream = streamAgent({ ...options, prompt: body.prompt, session: { store: runs, runId, scope } });
  return toAgentStreamResponse(stream, { runId, store: journal, scope });
}

// A client, reduced to its essentials: read the SSE frames and fold them.
const framesOf = async (response: Response) =>
  (await response.text()).split('\n').filter((line) => line.startsWith('data: ')).map((line) => JSON.parse(line.slice(6)));
const post = (body: object) => route(new Request('http://app/api/agent', { method: 'POST', body: JSON.stringify(body) }));

const first = await framesOf(await post({ prompt: 'Publish the notes.' }));
let state = agentStateFromParts(undefined, first);
console.log(state.status, state.pendingApprovals.map((a) => a.toolName), state.pendingClientCalls.map((c) => c.toolName));
// suspended [ 'publish' ] [ 'pickColor' ]

const [approval] = state.pendingApprovals;
const second = await framesOf(await post({
  runId: state.runId,
  approvalResponses: [{ approvalId: approval!.approvalId, token: approval!.token, approved: true }],
  clientToolResults: [{ toolCallId: state.pendingClientCalls[0]!.toolCallId, output: 'teal' }],
}));
state = agentStateFromParts(state, second);
console.log(state.status, state.output); // completed Published, with a teal banner.
console.log(first[0].seq, first.at(-1).seq, second[0].seq); // 1 16 17

// A client that dropped after frame 4 comes back with its cursor and gets the rest.
const replay = await framesOf(await route(new Request('http://app/api/agent?runId=run-1', { headers: { 'last-event-id': '4' } })));
console.log(replay[0].seq, replay.length === first.length + second.length - 4); // 5 true
// Frames it already had change nothing.
console.log(agentStateFromParts(state, [...first, ...replay]) === state); // true
