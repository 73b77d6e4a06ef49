/** One Responses model (POST {baseURL}/responses). */
import type { LanguageModel } from '../../models/types.js';
import { createWireModel, type WireModelConfig } from '../openai-compatible/wire-model.js';
import { responsesBody, type ResponsesWireOptions } from './responses-request.js';
import { responsesResponse, responsesStreamParts } from './responses-response.js';

export interface ResponsesModelConfig extends ResponsesWireOptions, WireModelConfig {}

export function createResponsesModel(config: ResponsesModelConfig): LanguageModel {
  return createWireModel(config, {
    path: 'responses',
    protocol: 'responses',
    body: (request) => responsesBody(request, config),
    streamFields: { stream: true },
    response: responsesResponse,
    stream: responsesStreamParts,
  });
}
