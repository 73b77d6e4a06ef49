import {
  createInMemoryAgentRunStore, resumeStreamAgent, streamAgent, type AgentTools, type ApprovalResponse, type ClientToolResult,
} from 'cairn/agent';
import { ChatController, type CursorStorage } from 'cairn/react';
import { createMockModel } from 'cairn/testing';
import {
  agentStateFromParts, createInMemoryAgentStreamJournal, initialAgentState, resumeAgentStreamResponse, toAgentStreamResponse,
} from 'cairn/ui';

// The server side, as in the route example: one approval and one client call in the same step.
const runs = createInMemoryAgentRunStore();
const journal = createInMemoryAgentStreamJournal();
const tools: AgentTools = {
  publish: { description: 'Publish.', parameters: { type: 'object', properties: {} }, needsApproval: true, execute: () => 'published' },
  pickColor: { description: 'Ask the reader for a colour.', parameters: { type: 'object', properties: {} } },
};
const model = createMockModel({
  responses: [{ toolCalls: [{ toolName: 'publish' }, { toolName: 'pickColor' }] }, { text: 'Done, in teal.' }],
});
const scope = 'tenant-a';
interface RouteBody { prompt?: string; runId?: string; approvalResponses?: ApprovalResponse[]; clientToolResults?: ClientToolResult[] }
const requests: string[] = [];
async function route(request: Request): Promise<Response> {
  requests.push(`${request.method} ${new URL(request.url).search}`);
  if (request.method === 'GET') {
    return resumeAgentStreamResponse({ store: journal, streamId: new URL(request.url).searchParams.get('runId') ?? '', scope, request });
  }
  const body = (await request.json()) as RouteBody;
  const session = { store: runs, runId: body.runId ?? 'chat-1', scope };
  const stream = body.runId
    ? resumeStreamAgent({ model, tools, session, approvalResponses: body.approvalResponses, clientToolResults: body.clientToolResults })
    : streamAgent({ model, tools, session, prompt: body.prompt });
  return toAgentStreamResponse(stream, { runId: session.runId, store: journal, scope });
}

// The page: in a browser, `fetch` and `sessionStorage` are the defaults; here they are stand-ins.
const saved = new Map<string, string>();
const storage: CursorStorage = {
  getItem: (key) => saved.get(key) ?? null,
  setItem: (key, value) => void saved.set(key, value),
  removeItem: (key) => void saved.delete(key),
};
const fetchRoute = async (input: string | URL | Request, init?: RequestInit) => route(new Request(new URL(String(input), 'http://app'), init));
const chat = new ChatController({
  api: '/api/agent', initialState: initialAgentState(), reduce: agentStateFromParts, fetch: fetchRoute as typeof fetch, storage,
});

await chat.send('Publish the notes.');
const { state } = chat.snapshot;
console.log(state.status, chat.snapshot.runId, chat.snapshot.cursor); // suspended chat-1 16

// One request answers both: the verdict and the client result, with the run id.
await chat.resume({
  approvalResponses: state.pendingApprovals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: true })),
  clientToolResults: state.pendingClientCalls.map((c) => ({ toolCallId: c.toolCallId, output: 'teal' })),
});
console.log(chat.snapshot.state.status, chat.snapshot.state.output); // completed Done, in teal.

// After a reload: a new controller finds the run in storage; its state is empty, so it reads the stream from the start.
const reloaded = new ChatController({
  api: '/api/agent', initialState: initialAgentState(), reduce: agentStateFromParts, fetch: fetchRoute as typeof fetch, storage,
});
console.log(reloaded.hasSavedRun); // true
await reloaded.reconnect();
console.log(reloaded.snapshot.state.status, reloaded.snapshot.state.output); // completed Done, in teal.
console.log(requests.join(' | ')); // POST  | POST  | GET ?runId=chat-1
