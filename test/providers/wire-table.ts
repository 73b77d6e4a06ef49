/**
 * Every wire in src/providers, as the wire tests drive them: how to make a
 * model against the local server, its endpoints, and one short answer
 * ("Hi") in its own format, whole and as stream events split into a head
 * (metadata only), the text, and the closing events.
 */
import { createAnthropic } from 'cairn/anthropic';
import { createGoogle } from 'cairn/google';
import type { LanguageModel, TransportTimeouts } from 'cairn/models';
import { createOpenAI } from 'cairn/openai';
import { createOpenAICompatible } from 'cairn/openai-compatible';
import type { WireReply } from './wire-server.js';

type SseEntry = NonNullable<WireReply['sse']>[number];

export interface WireCase {
  name: string;
  provider: string;
  make(serverUrl: string, settings?: { timeouts?: TransportTimeouts; fetch?: typeof fetch }): LanguageModel;
  /** The endpoints of doGenerate and doStream, without query. */
  generateUrl(serverUrl: string): string;
  streamUrl(serverUrl: string): string;
  head: SseEntry[];
  text: SseEntry[];
  finish: SseEntry[];
  /** The same answer as one JSON body. */
  answer: unknown;
}

export const WIRE_KEY = 'sk-wire-test-0a1b2c';

const chatChunk = (delta: object, finish: string | null = null, extra: object = {}) => ({
  id: 'chatcmpl-w', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta, finish_reason: finish }], ...extra,
});
const chatEvents = {
  head: [chatChunk({ role: 'assistant' })],
  text: [chatChunk({ content: 'Hi' })],
  finish: [chatChunk({}, 'stop', { usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } }), '[DONE]'],
  answer: {
    id: 'chatcmpl-w', object: 'chat.completion', model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
  },
};

export const WIRES: WireCase[] = [
  {
    name: 'openai responses',
    provider: 'openai',
    make: (url, settings) => createOpenAI({ apiKey: WIRE_KEY, baseURL: `${url}/v1`, ...settings })('gpt-4.1'),
    generateUrl: (url) => `${url}/v1/responses`,
    streamUrl: (url) => `${url}/v1/responses`,
    head: [{ type: 'response.created', response: { id: 'resp_w', model: 'm', status: 'in_progress', output: [] } }],
    text: [{ type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hi' }],
    finish: [{
      type: 'response.completed',
      response: { id: 'resp_w', model: 'm', status: 'completed', output: [], usage: { input_tokens: 3, output_tokens: 1, total_tokens: 4 } },
    }],
    answer: {
      id: 'resp_w', model: 'm', status: 'completed',
      output: [{ type: 'message', id: 'msg_1', role: 'assistant', content: [{ type: 'output_text', text: 'Hi' }] }],
      usage: { input_tokens: 3, output_tokens: 1, total_tokens: 4 },
    },
  },
  {
    name: 'openai chat',
    provider: 'openai',
    make: (url, settings) => createOpenAI({ apiKey: WIRE_KEY, baseURL: `${url}/v1`, ...settings }).chat('gpt-4.1'),
    generateUrl: (url) => `${url}/v1/chat/completions`,
    streamUrl: (url) => `${url}/v1/chat/completions`,
    ...chatEvents,
  },
  {
    name: 'anthropic',
    provider: 'anthropic',
    make: (url, settings) => createAnthropic({ apiKey: WIRE_KEY, baseURL: `${url}/v1`, ...settings })('claude-sonnet-4-5'),
    generateUrl: (url) => `${url}/v1/messages`,
    streamUrl: (url) => `${url}/v1/messages`,
    head: [{ type: 'message_start', message: { id: 'msg_w', type: 'message', role: 'assistant', model: 'm', content: [], usage: { input_tokens: 3, output_tokens: 0 } } }],
    text: [
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } },
    ],
    finish: [
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 1 } },
      { type: 'message_stop' },
    ],
    answer: {
      id: 'msg_w', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'Hi' }],
      stop_reason: 'end_turn', usage: { input_tokens: 3, output_tokens: 1 },
    },
  },
  {
    name: 'google',
    provider: 'google',
    make: (url, settings) => createGoogle({ apiKey: WIRE_KEY, baseURL: `${url}/v1beta`, ...settings })('gemini-2.5-flash'),
    generateUrl: (url) => `${url}/v1beta/models/gemini-2.5-flash:generateContent`,
    streamUrl: (url) => `${url}/v1beta/models/gemini-2.5-flash:streamGenerateContent`,
    head: [{ candidates: [{ content: { role: 'model', parts: [] } }], responseId: 'g_w', modelVersion: 'm' }],
    text: [{ candidates: [{ content: { role: 'model', parts: [{ text: 'Hi' }] } }] }],
    finish: [{
      candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 },
    }],
    answer: {
      candidates: [{ content: { role: 'model', parts: [{ text: 'Hi' }] }, finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 }, responseId: 'g_w', modelVersion: 'm',
    },
  },
  {
    name: 'openai-compatible',
    provider: 'localai',
    make: (url, settings) => createOpenAICompatible({ name: 'localai', baseURL: `${url}/v1`, ...settings })('local-llm'),
    generateUrl: (url) => `${url}/v1/chat/completions`,
    streamUrl: (url) => `${url}/v1/chat/completions`,
    ...chatEvents,
  },
];

/** The whole answer as stream events. */
export const fullStream = (wire: WireCase): SseEntry[] => [...wire.head, ...wire.text, ...wire.finish];

/** The same events as one SSE text (for a reply sent in one piece). */
export function sseText(entries: SseEntry[]): string {
  return entries.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`).join('');
}
