/**
 * A Cairn request → the JSON body of POST /v1/messages: prompt, tools, tool
 * choice, thinking and effort, sampling, prompt-cache breakpoints, structured
 * output, then the run's `providerOptions.anthropic` merged over the top.
 */
import type { ModelCallWarning, ModelRequest, ModelSettings, ModelToolSpec, ToolChoice } from '../../models/types.js';
import type {
  MessagesRequestBody, TextBlock, WireOutputConfig, WireThinking, WireTool, WireToolChoice,
} from './anthropic-api.js';
import { convertMessages, PROVIDER_KEY } from './anthropic-messages.js';
import {
  ANSWER_ROOM_TOKENS, claudeFamily, MIN_THINKING_BUDGET, nearestEffort, THINKING_BUDGETS, type ClaudeFamily,
} from './anthropic-models.js';

export interface BuiltRequest {
  body: MessagesRequestBody;
  warnings: ModelCallWarning[];
}

const EPHEMERAL = { type: 'ephemeral' } as const;

function wireTools(tools: readonly ModelToolSpec[]): WireTool[] {
  return tools.map((tool) => ({
    name: tool.name,
    ...(tool.description !== undefined ? { description: tool.description } : {}),
    input_schema: tool.parameters,
  }));
}

function wireToolChoice(choice: ToolChoice): WireToolChoice {
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'none') return { type: 'none' };
  if (choice === 'required') return { type: 'any' };
  return { type: 'tool', name: choice.toolName };
}

interface Reasoning {
  thinking?: WireThinking;
  effort?: string;
  /** The thinking budget, when one was sent (it sizes the default max_tokens). */
  budget?: number;
}

/** Cairn's effort → `thinking` and `output_config.effort`, as the model family takes them. */
function reasoningOf(family: ClaudeFamily, settings: ModelSettings, forcedTool: boolean, warnings: ModelCallWarning[]): Reasoning {
  const effort = settings.effort;
  if (effort === undefined || effort === 'none') return {};
  const out: Reasoning = {};
  if (family.effortLevels) {
    const level = nearestEffort(effort, family.effortLevels);
    if (level !== effort) warnings.push({ type: 'other', message: `effort '${effort}' is sent as '${level}', the nearest level this model takes.` });
    out.effort = level;
  }
  if (family.thinking === 'adaptive') {
    out.thinking = { type: 'adaptive' };
    return out;
  }
  if (forcedTool) {
    // Manual extended thinking refuses a tool choice that forces a call.
    warnings.push({ type: 'unsupported-setting', setting: 'effort', details: 'Extended thinking is left out: the tool choice forces a tool call.' });
    return out;
  }
  let budget = THINKING_BUDGETS[effort];
  // The budget is part of max_tokens: it never takes more than half of a max the run set.
  if (settings.maxOutputTokens !== undefined) budget = Math.min(budget, Math.floor(settings.maxOutputTokens / 2));
  if (budget < MIN_THINKING_BUDGET) {
    warnings.push({
      type: 'unsupported-setting', setting: 'effort',
      details: `Extended thinking is left out: maxOutputTokens ${settings.maxOutputTokens} leaves less than the ${MIN_THINKING_BUDGET}-token minimum budget.`,
    });
    return out;
  }
  out.thinking = { type: 'enabled', budget_tokens: budget };
  out.budget = budget;
  return out;
}

function sampling(family: ClaudeFamily, settings: ModelSettings, thinking: boolean, warnings: ModelCallWarning[]): { temperature?: number; top_p?: number } {
  const out: { temperature?: number; top_p?: number } = {};
  if (settings.temperature !== undefined) {
    if (family.sampling === 'none') warnings.push({ type: 'unsupported-setting', setting: 'temperature', details: 'This model refuses temperature.' });
    else if (thinking) warnings.push({ type: 'unsupported-setting', setting: 'temperature', details: 'The API refuses temperature while thinking is on.' });
    else out.temperature = settings.temperature;
  }
  if (settings.topP !== undefined) {
    if (family.sampling === 'none') warnings.push({ type: 'unsupported-setting', setting: 'topP', details: 'This model refuses top_p.' });
    else if (family.sampling === 'one' && out.temperature !== undefined) {
      warnings.push({ type: 'unsupported-setting', setting: 'topP', details: 'This model takes temperature or top_p, not both; temperature was sent.' });
    } else out.top_p = settings.topP;
  }
  return out;
}

/**
 * Prompt-cache breakpoints: the last system block, the last tool, and the last
 * block of the last user turn (in a tool loop, the newest tool results), so
 * each step reads the prefix the step before it wrote. Three of the API's four.
 */
function markCache(system: TextBlock[], tools: WireTool[], body: MessagesRequestBody): void {
  const lastSystem = system[system.length - 1];
  if (lastSystem) lastSystem.cache_control = EPHEMERAL;
  const lastTool = tools[tools.length - 1];
  if (lastTool) lastTool.cache_control = EPHEMERAL;
  for (let i = body.messages.length - 1; i >= 0; i--) {
    const message = body.messages[i]!;
    if (message.role !== 'user') continue;
    const block = message.content[message.content.length - 1];
    if (block) block.cache_control = EPHEMERAL;
    break;
  }
}

export function buildRequestBody(modelId: string, request: ModelRequest, stream: boolean): BuiltRequest {
  const warnings: ModelCallWarning[] = [];
  const settings = request.settings ?? {};
  const family = claudeFamily(modelId);
  const { system, messages } = convertMessages(request.messages);
  const tools = wireTools(request.tools);
  const forcedTool = tools.length > 0 && request.toolChoice !== 'auto' && request.toolChoice !== 'none';
  const reasoning = reasoningOf(family, settings, forcedTool, warnings);
  const maxTokens = settings.maxOutputTokens
    ?? (reasoning.budget !== undefined ? reasoning.budget + ANSWER_ROOM_TOKENS : family.defaultMaxTokens);

  const outputConfig: WireOutputConfig = {};
  if (reasoning.effort !== undefined) outputConfig.effort = reasoning.effort;
  if (request.responseFormat?.type === 'json') {
    if (request.responseFormat.schema !== undefined) {
      outputConfig.format = { type: 'json_schema', schema: request.responseFormat.schema };
    } else {
      warnings.push({ type: 'unsupported-setting', setting: 'responseFormat', details: 'Anthropic structured output needs a JSON schema.' });
    }
  }

  const body: MessagesRequestBody = {
    model: modelId,
    max_tokens: maxTokens,
    ...(system.length > 0 ? { system } : {}),
    messages,
    // Without tools there is no tool choice to make.
    ...(tools.length > 0 ? { tools, tool_choice: wireToolChoice(request.toolChoice) } : {}),
    ...(reasoning.thinking ? { thinking: reasoning.thinking } : {}),
    ...(Object.keys(outputConfig).length > 0 ? { output_config: outputConfig } : {}),
    ...sampling(family, settings, reasoning.thinking !== undefined, warnings),
    ...(stream ? { stream: true } : {}),
  };
  if (settings.promptCaching === true) markCache(system, tools, body);
  return { body: { ...body, ...(request.providerOptions?.[PROVIDER_KEY] ?? {}) }, warnings };
}
