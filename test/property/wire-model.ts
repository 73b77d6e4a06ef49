/**
 * The crash property's model over a real wire: a Cairn provider adapter
 * (cairn/openai-compatible, Chat Completions) against a local server that
 * answers each request with the scenario's scripted turn as an SSE stream,
 * and injects one fault at the Nth call: a 503, a 429, or a stream cut after
 * its first text. With `fallback`, the run has a scripted fallback model that
 * answers the same script, so a 503 or a 429 fails over instead of failing
 * the run.
 */
import type { LanguageModel, Message } from 'cairn/agent';
import { createOpenAICompatible } from 'cairn/openai-compatible';
import { createMockModel, type MockTurn } from 'cairn/testing';
import { startWireServer, type RecordedRequest, type WireReply, type WireServer } from '../providers/wire-server.js';
import { scriptedTurn, type Scenario } from './scenario.js';

export type WireFaultMode = '503' | '429' | 'cut';

export interface WireFault {
  at: number;
  mode: WireFaultMode;
  calls: number;
  fired: boolean;
}

let server: WireServer | undefined;

/** One server for the whole suite; each drive sets its own handler. */
export async function wireServer(): Promise<WireServer> {
  server ??= await startWireServer();
  return server;
}

export async function closeWireServer(): Promise<void> {
  await server?.close();
  server = undefined;
}

/** The chat wire's messages as the scripted model counts them: only the roles matter. */
function asModelRequest(request: RecordedRequest) {
  const body = request.body as { messages: Array<{ role: string }> };
  return { messages: body.messages as unknown as Message[], tools: [], toolChoice: 'auto' as const };
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  data: { id: 'chatcmpl-p', object: 'chat.completion.chunk', created: 1, model: 'scripted', choices: [{ index: 0, delta, finish_reason: finish }] },
});

/** A scripted turn as a Chat Completions SSE answer, each call's arguments split in two pieces. */
function sseOf(turn: MockTurn): WireReply {
  const events: WireReply['sse'] = [];
  if (turn.toolCalls && turn.toolCalls.length > 0) {
    turn.toolCalls.forEach((call, index) => {
      const args = JSON.stringify(call.args ?? {});
      const half = Math.floor(args.length / 2);
      events.push(chunk({ tool_calls: [{ index, id: call.toolCallId, type: 'function', function: { name: call.toolName, arguments: args.slice(0, half) } }] }));
      events.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }));
    });
    events.push(chunk({}, 'tool_calls'));
  } else {
    const text = turn.text ?? '';
    events.push(chunk({ role: 'assistant', content: text.slice(0, 3) }));
    events.push(chunk({ content: text.slice(3) }));
    events.push(chunk({}, 'stop'));
  }
  events.push({ data: { id: 'chatcmpl-p', object: 'chat.completion.chunk', created: 1, model: 'scripted', choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } } });
  events.push('[DONE]');
  return { sse: events };
}

function faultReply(mode: WireFaultMode): WireReply {
  if (mode === '503') return { status: 503, json: { error: { message: 'The server is overloaded (injected).', type: 'server_error' } } };
  if (mode === '429') return { status: 429, headers: { 'retry-after': '0' }, json: { error: { message: 'Rate limited (injected).', type: 'rate_limit' } } };
  // Text first, then the connection drops: a stream that broke off after its first content.
  return { sse: [chunk({ role: 'assistant', content: 'Partial' }), chunk({ content: ' answer' })], cutAfter: 1 };
}

/**
 * Every answer closes its connection. A kept-alive socket that sat idle while
 * other drives ran (seconds, under load) can be closed by the server's
 * keep-alive timer just as the client sends the next call on it: that call then
 * fails with no answer, which is no fault of the drive's, and with a fallback
 * model it is answered there, so the drive's Nth wire call never comes.
 */
const closing = (reply: WireReply): WireReply => ({ ...reply, headers: { ...reply.headers, connection: 'close' } });

/** Points the server at this drive's scenario and fault. */
export function answerScenario(wire: WireServer, scenario: Scenario, fault: WireFault): void {
  wire.handler = (request) => {
    if (!fault.fired && ++fault.calls === fault.at) {
      fault.fired = true;
      return closing(faultReply(fault.mode));
    }
    return closing(sseOf(scriptedTurn(scenario, asModelRequest(request) as never)));
  };
}

/** The wire model of a leg, and the scripted fallback when the fault asks for one. */
export function wireModels(wire: WireServer, scenario: Scenario, fallback: boolean): { model: LanguageModel; fallbackModels?: LanguageModel[] } {
  const model = createOpenAICompatible({ name: 'wire', baseURL: `${wire.url}/v1` })('scripted');
  if (!fallback) return { model };
  const backup = createMockModel({ modelId: 'fallback', strict: false, responses: [(request) => scriptedTurn(scenario, request)] });
  return { model, fallbackModels: [backup] };
}
