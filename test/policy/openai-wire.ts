/**
 * Answers of the OpenAI Chat Completions wire for the budget tests: a streamed
 * completion (text or one tool call) with the usage the server says it billed.
 */
import type { RecordedRequest, WireReply } from '../providers/wire-server.js';

export interface Billed {
  prompt: number;
  completion: number;
  cached?: number;
}

export interface Answer {
  text?: string;
  toolCall?: { id: string; name: string; args: unknown };
  usage: Billed;
}

const chunk = (choices: unknown[], extra: object = {}) => ({
  id: 'chatcmpl-budget', object: 'chat.completion.chunk', created: 1_765_000_000, model: 'gpt-4.1-2025-04-14', choices, ...extra,
});

/** The streamed reply of one completion. */
export function streamed(answer: Answer): WireReply {
  const delta = answer.toolCall
    ? { role: 'assistant', tool_calls: [{ index: 0, id: answer.toolCall.id, type: 'function', function: { name: answer.toolCall.name, arguments: JSON.stringify(answer.toolCall.args) } }] }
    : { role: 'assistant', content: answer.text ?? '' };
  const { prompt, completion, cached = 0 } = answer.usage;
  return {
    sse: [
      chunk([{ index: 0, delta, finish_reason: null }]),
      chunk([{ index: 0, delta: {}, finish_reason: answer.toolCall ? 'tool_calls' : 'stop' }]),
      chunk([], {
        usage: {
          prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion,
          prompt_tokens_details: { cached_tokens: cached }, completion_tokens_details: { reasoning_tokens: 0 },
        },
      }),
      '[DONE]',
    ],
  };
}

/** UTF-8 bytes of the text of every message the request sent: what a tokenizer bills at most for it. */
export function textBytesOf(request: RecordedRequest): number {
  const body = request.body as { messages?: Array<{ content?: unknown; tool_calls?: unknown }> };
  let bytes = 0;
  for (const message of body.messages ?? []) {
    if (typeof message.content === 'string') bytes += Buffer.byteLength(message.content);
    if (message.tool_calls !== undefined) bytes += Buffer.byteLength(JSON.stringify(message.tool_calls));
  }
  return bytes;
}
