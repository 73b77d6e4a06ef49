/**
 * An AI SDK stream as Cairn stream parts, in order: warnings, response
 * metadata, text and reasoning deltas, a complete reasoning part when its
 * block ends, tool-call start / delta / complete, and `finish` last.
 */
import type { ModelCallWarning, ModelStreamPart } from '../types.js';
import { APICallError } from '../../errors/index.js';
import type { JsonValue } from '../../agent/json.js';
import { fromStreamPayload, toCairnError, type ErrorContext } from './errors.js';
import {
  finishReasonOf, mergeOwn, reasoningOf, toolCallOf, turnMetadataOf, usageOf, warningsOf,
} from './response.js';
import type { FinishReasonValue, StreamPart, UsageV2, UsageV3 } from './spec.js';

export interface StreamContext extends ErrorContext {
  providerKey: string;
  /** The adapter's own warnings about the request. */
  warnings: ModelCallWarning[];
}

type Metadata = Record<string, unknown> | undefined;

/** Shallow-merges metadata per provider key: a block's end part has the final values (an encrypted reasoning item, say). */
function mergeMetadata(a: Metadata, b: Metadata): Metadata {
  if (!b) return a;
  if (!a) return b;
  const out: Record<string, unknown> = { ...a };
  for (const [key, value] of Object.entries(b)) {
    const old = out[key];
    out[key] = old && typeof old === 'object' && value && typeof value === 'object' ? { ...old, ...value } : value;
  }
  return out;
}

/**
 * AI SDK providers emit a `finish` part when the body ends, whether or not the
 * wire's last event came. v4 says so (`interrupted`); before it, a finish with no
 * reason from the provider (`unknown` in v2, `raw` undefined in v3) and no usage
 * at all is a stream that ended early, not a finished turn.
 */
function endedEarly(reason: FinishReasonValue | undefined, usage: UsageV2 | UsageV3 | undefined): boolean {
  if (typeof reason === 'object' && reason.unified === 'interrupted') return true;
  const transmitted = typeof reason === 'string' ? reason !== 'unknown' : reason !== undefined && (reason.raw !== undefined || reason.unified !== 'other');
  if (transmitted) return false;
  const counts = [usage?.inputTokens, usage?.outputTokens, (usage as UsageV2 | undefined)?.totalTokens]
    .flatMap((c) => (c !== null && typeof c === 'object' ? Object.values(c) : [c]));
  return counts.every((c) => c === undefined);
}

export async function* mapStream(stream: ReadableStream<StreamPart>, ctx: StreamContext): AsyncGenerator<ModelStreamPart> {
  const { providerKey: key } = ctx;
  const reader = stream.getReader();
  const reasoning = new Map<string, { text: string; metadata: Metadata }>();
  const started = new Set<string>();
  const serverSide = new Set<string>();
  let textMetadata: Record<string, JsonValue> | undefined;
  let warned = false;
  let finished = false;
  let done = false;
  const warn = function* (more: ModelCallWarning[] = []): Generator<ModelStreamPart> {
    if (warned) return;
    warned = true;
    const warnings = [...ctx.warnings, ...more];
    if (warnings.length > 0) yield { type: 'warnings', warnings };
  };
  try {
    for (;;) {
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await reader.read();
      } catch (error) {
        throw toCairnError(error, ctx);
      }
      if (next.done) {
        done = true;
        break;
      }
      const part = next.value;
      if (part.type === 'stream-start') {
        yield* warn(warningsOf(part.warnings));
        continue;
      }
      if (part.type === 'raw' || part.type === 'ping') continue;
      yield* warn();
      switch (part.type) {
        case 'response-metadata':
          yield {
            type: 'response-metadata',
            ...(typeof part.id === 'string' ? { id: part.id } : {}),
            ...(typeof part.modelId === 'string' ? { modelId: part.modelId } : {}),
          };
          break;
        case 'text-start':
        case 'text-end':
          textMetadata = mergeOwn(textMetadata, part.providerMetadata, key);
          break;
        case 'text-delta':
          textMetadata = mergeOwn(textMetadata, part.providerMetadata, key);
          if (part.delta !== '') yield { type: 'text-delta', delta: part.delta };
          break;
        case 'reasoning-start':
          reasoning.set(part.id, { text: '', metadata: part.providerMetadata });
          break;
        case 'reasoning-delta': {
          const block = reasoning.get(part.id) ?? { text: '', metadata: undefined };
          block.text += part.delta;
          block.metadata = mergeMetadata(block.metadata, part.providerMetadata);
          reasoning.set(part.id, block);
          if (part.delta !== '') yield { type: 'reasoning-delta', delta: part.delta };
          break;
        }
        case 'reasoning-end': {
          const block = reasoning.get(part.id) ?? { text: '', metadata: undefined };
          reasoning.delete(part.id);
          yield { type: 'reasoning', reasoning: reasoningOf(block.text, mergeMetadata(block.metadata, part.providerMetadata)) };
          break;
        }
        case 'tool-input-start':
          if (part.providerExecuted) {
            serverSide.add(part.id);
            break;
          }
          started.add(part.id);
          yield { type: 'tool-call-start', toolCallId: part.id, toolName: part.toolName };
          break;
        case 'tool-input-delta':
          if (!serverSide.has(part.id) && part.delta !== '') yield { type: 'tool-call-delta', toolCallId: part.id, argsTextDelta: part.delta };
          break;
        case 'tool-input-end':
          break;
        case 'tool-call':
          // A call the provider ran itself (a hosted web search, say) is not Cairn's to dispatch.
          if (part.providerExecuted || serverSide.has(part.toolCallId)) break;
          if (!started.has(part.toolCallId)) {
            // Some providers send only the finished call: give consumers the start and the arguments too.
            yield { type: 'tool-call-start', toolCallId: part.toolCallId, toolName: part.toolName };
            if (typeof part.input === 'string' && part.input !== '') {
              yield { type: 'tool-call-delta', toolCallId: part.toolCallId, argsTextDelta: part.input };
            }
          }
          yield { type: 'tool-call', toolCall: toolCallOf(part) };
          break;
        case 'finish': {
          if (endedEarly(part.finishReason, part.usage)) break;
          const providerMetadata = turnMetadataOf(part.providerMetadata, textMetadata, key);
          finished = true;
          yield {
            type: 'finish',
            finishReason: finishReasonOf(part.finishReason),
            usage: usageOf(part.usage),
            ...(providerMetadata ? { providerMetadata } : {}),
          };
          break;
        }
        case 'error':
          // Thrown, not yielded: the error keeps its status and retryability for the engine's classification.
          throw fromStreamPayload(part.error, ctx);
        default:
          // Files, sources, provider-run tool results: nothing Cairn's model spec carries.
          break;
      }
    }
  } finally {
    if (!done) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
  if (!finished) {
    throw new APICallError({
      message: `The stream of ${ctx.provider} ended early: it closed before the provider said the turn was finished.`,
      provider: ctx.provider, url: '', isRetryable: true,
    });
  }
}
