/**
 * One ModelRequest as a generateContent body: the conversation, the function
 * declarations and tool config, the generation config, and the settings the
 * wire does not take as warnings. `providerOptions.google` is merged in last.
 */
import type { ModelCallWarning, ModelRequest, ModelToolSpec, ToolChoice } from '../../models/types.js';
import type { GeminiGenerationConfig, GeminiRequestBody } from './google-api.js';
import { PROVIDER_KEY, toGeminiConversation } from './google-messages.js';
import { thinkingFor } from './google-thinking.js';

export interface BuiltRequest {
  body: GeminiRequestBody;
  warnings: ModelCallWarning[];
}

function toolConfigOf(choice: ToolChoice): NonNullable<GeminiRequestBody['toolConfig']> {
  if (typeof choice === 'object') return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.toolName] } };
  const mode = choice === 'required' ? 'ANY' : choice === 'none' ? 'NONE' : 'AUTO';
  return { functionCallingConfig: { mode } };
}

function declarations(tools: readonly ModelToolSpec[]): NonNullable<GeminiRequestBody['tools']> {
  return [{
    functionDeclarations: tools.map((tool) => ({
      name: tool.name,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      // JSON Schema as it is, instead of a lossy conversion to the OpenAPI subset of `parameters`.
      parametersJsonSchema: tool.parameters,
    })),
  }];
}

export function buildRequest(modelId: string, request: ModelRequest): BuiltRequest {
  const warnings: ModelCallWarning[] = [];
  const settings = request.settings ?? {};
  const body: GeminiRequestBody = { ...toGeminiConversation(request.messages) };

  // A json-strategy turn sends the schema alone: no declarations beside a response schema.
  if (!request.responseFormat && request.tools.length > 0) {
    body.tools = declarations(request.tools);
    body.toolConfig = toolConfigOf(request.toolChoice);
  }

  const config: GeminiGenerationConfig = {};
  if (settings.temperature !== undefined) config.temperature = settings.temperature;
  if (settings.topP !== undefined) config.topP = settings.topP;
  if (settings.maxOutputTokens !== undefined) config.maxOutputTokens = settings.maxOutputTokens;
  if (request.responseFormat) {
    config.responseMimeType = 'application/json';
    if (request.responseFormat.schema !== undefined) config.responseJsonSchema = request.responseFormat.schema;
  }
  const thinking = thinkingFor(modelId, settings.effort);
  if (thinking.config) config.thinkingConfig = thinking.config;
  if (thinking.warning) warnings.push(thinking.warning);
  // promptCaching needs nothing: Gemini caches repeated prefixes on its own (implicit caching).
  if (Object.keys(config).length > 0) body.generationConfig = config;

  const own = request.providerOptions?.[PROVIDER_KEY];
  if (own) Object.assign(body, own);
  return { body, warnings };
}
