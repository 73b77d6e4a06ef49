/**
 * The Gemini API's generateContent wire (v1beta), as far as this adapter
 * reads or writes it. Field names are the REST API's own (camelCase JSON).
 */
import type { JsonValue } from '../../agent/json.js';

export type GeminiJsonObject = { [key: string]: JsonValue };

/** One part of a content. A part carries one kind of data; `thoughtSignature` may sit on any of them. */
export interface GeminiPart {
  text?: string;
  /** A thought summary (sent only when thinkingConfig.includeThoughts is true). */
  thought?: boolean;
  /** Opaque; must go back byte for byte on the same part in later requests. */
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  fileData?: { mimeType?: string; fileUri: string };
  functionCall?: { id?: string; name: string; args?: GeminiJsonObject };
  functionResponse?: { id?: string; name: string; response: GeminiJsonObject; parts?: GeminiPart[] };
}

export interface GeminiContent {
  role: 'user' | 'model';
  parts: GeminiPart[];
}

export interface GeminiFunctionDeclaration {
  name: string;
  description?: string;
  /** JSON Schema as it is; mutually exclusive with the OpenAPI-subset `parameters`. */
  parametersJsonSchema?: JsonValue;
}

export interface GeminiThinkingConfig {
  /** Gemini 2.5: tokens the model may think; 0 turns thinking off (not on 2.5 Pro). */
  thinkingBudget?: number;
  /** Gemini 3 and later. */
  thinkingLevel?: 'minimal' | 'low' | 'medium' | 'high';
  includeThoughts?: boolean;
}

export interface GeminiGenerationConfig {
  temperature?: number;
  topP?: number;
  maxOutputTokens?: number;
  responseMimeType?: string;
  /** JSON Schema as it is; mutually exclusive with the OpenAPI-subset `responseSchema`. */
  responseJsonSchema?: JsonValue;
  thinkingConfig?: GeminiThinkingConfig;
}

export interface GeminiRequestBody {
  systemInstruction?: { parts: Array<{ text: string }> };
  contents: GeminiContent[];
  tools?: Array<{ functionDeclarations: GeminiFunctionDeclaration[] }>;
  toolConfig?: { functionCallingConfig: { mode: 'AUTO' | 'ANY' | 'NONE'; allowedFunctionNames?: string[] } };
  generationConfig?: GeminiGenerationConfig;
  [extra: string]: unknown;
}

export interface GeminiUsageMetadata {
  /** Every prompt token, the cached ones included. */
  promptTokenCount?: number;
  cachedContentTokenCount?: number;
  /** The answer's tokens, thoughts not included. */
  candidatesTokenCount?: number;
  toolUsePromptTokenCount?: number;
  thoughtsTokenCount?: number;
  totalTokenCount?: number;
}

export interface GeminiCandidate {
  content?: { role?: string; parts?: GeminiPart[] };
  finishReason?: string;
}

/** The answer of generateContent, and each SSE chunk of streamGenerateContent. */
export interface GeminiResponse {
  candidates?: GeminiCandidate[];
  promptFeedback?: { blockReason?: string };
  usageMetadata?: GeminiUsageMetadata;
  modelVersion?: string;
  responseId?: string;
}

/** Google's error body: `{ error: { code, message, status, details } }`. */
export interface GeminiErrorBody {
  error?: { code?: number; message?: string; status?: string; details?: unknown[] };
}
