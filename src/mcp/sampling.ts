/**
 * Sampling requests from a server (`sampling/createMessage`), when the run
 * turned sampling on: each is admitted as a model call of the run (the
 * deadline, cancellation, the execution policy's model allowlist, a budget
 * reservation) before the model is called, and its usage is settled in the
 * run's ledger. A refused request is answered with an error the server sees,
 * and a warning on the run's stream. @internal
 */
import { BudgetRefusal } from '../runtime/budget.js';
import type { Leg } from '../runtime/host-state.js';
import { modelKey } from '../models/resolve.js';
import type { LanguageModel, ModelMessage, ModelRequest } from '../models/types.js';
import { McpError } from './errors.js';
import type { SdkCreateMessageRequest, SdkCreateMessageResult } from './sdk.js';

export interface SamplingSettings {
  model: LanguageModel;
  maxTokens: number;
}

type Params = SdkCreateMessageRequest['params'];

function textOfContent(content: unknown): string {
  const blocks = Array.isArray(content) ? content : [content];
  return blocks.map((b) => {
    const block = b as { type?: unknown; text?: unknown };
    return block?.type === 'text' && typeof block.text === 'string' ? block.text : `[${String(block?.type ?? 'content')}]`;
  }).join('\n');
}

/** The request as the run's model takes it: the server's system prompt, then its messages as text. */
export function samplingRequest(params: Params, settings: SamplingSettings, signal: AbortSignal): ModelRequest {
  const messages: ModelMessage[] = [];
  if (typeof params.systemPrompt === 'string' && params.systemPrompt !== '') messages.push({ role: 'system', content: params.systemPrompt });
  for (const message of params.messages) {
    const text = textOfContent(message.content);
    messages.push(message.role === 'assistant' ? { role: 'assistant', content: text } : { role: 'user', content: text });
  }
  const maxOutputTokens = Math.min(typeof params.maxTokens === 'number' ? params.maxTokens : settings.maxTokens, settings.maxTokens);
  return {
    messages,
    tools: [],
    toolChoice: 'auto',
    settings: { maxOutputTokens, ...(typeof params.temperature === 'number' ? { temperature: params.temperature } : {}) },
    signal,
  };
}

/** Answers one sampling request of `server` for the leg, or refuses it (mcp_sampling_refused). */
export async function answerSampling(
  leg: Leg,
  server: string,
  settings: SamplingSettings,
  params: Params,
  signal: AbortSignal,
  step: number,
): Promise<SdkCreateMessageResult> {
  const key = modelKey(settings.model);
  const refuse = (why: string, cause?: unknown): never => {
    const error = new McpError('mcp_sampling_refused', server, `MCP server ${server} asked for sampling; refused: ${why}.`, { cause });
    leg.emit({ type: 'warning', setting: 'mcp', message: error.message });
    throw error;
  };
  const deadlineAt = leg.opts.deadlineAt;
  if (deadlineAt !== null && leg.opts.now() >= deadlineAt) refuse('the run\'s deadline has passed');
  if (leg.signal.aborted) refuse('the run was cancelled');
  const execution = leg.opts.execution;
  if (execution && !execution.allowsModel(settings.model)) refuse(`the execution policy does not allow the model ${key}`);
  const request = samplingRequest(params, settings, AbortSignal.any([signal, leg.signal]));
  let reservation: string | null = null;
  if (leg.budget) {
    try {
      reservation = await leg.budget.admit(settings.model, request, step, request.settings?.maxOutputTokens);
    } catch (error) {
      if (error instanceof BudgetRefusal) refuse(`the budget of ${error.details.scope} does not admit the call`, error);
      refuse(`its budget admission failed: ${(error as Error).message}`, error);
    }
  }
  try {
    const response = await settings.model.doGenerate(request);
    if (reservation !== null) await leg.budget!.settle(reservation, settings.model, response.usage);
    return {
      role: 'assistant',
      content: { type: 'text', text: response.text },
      model: key,
      stopReason: response.finishReason === 'length' ? 'maxTokens' : 'endTurn',
    } as SdkCreateMessageResult;
  } catch (error) {
    if (reservation !== null) await leg.budget!.fail(reservation, error).catch(() => undefined);
    throw error;
  }
}
