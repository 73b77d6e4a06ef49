/**
 * The spans of one leg of a run (a start or a resume, in one process): the
 * run, each model step, each model call (with the GenAI semantic
 * conventions' `gen_ai.*` attributes), each tool call and each store save.
 * A leg that goes on from a stored run links its run span to the previous
 * leg's, whose span context the record carries (`envelope.trace`), so a
 * suspension and a resume in another process read as one story.
 *
 * Attributes hold ids, counts, names, outcomes and statuses; prompts, tool
 * arguments and results only with `tracing.recordContent`.
 */
import { InvalidOptionsError, redactSecrets } from '../errors/index.js';
import type { AgentEvent, AgentResult, AgentRunEnvelope, Usage } from '../agent/types.js';
import {
  KIND_CLIENT, KIND_INTERNAL, otelApi, STATUS_ERROR, STATUS_OK, storedSpanContext,
  type Attributes, type OtelApi, type SpanContextLike, type SpanLike, type StoredTrace, type TracerLike, type TracingOptions,
} from './otel.js';

export type { StoredTrace, TracingOptions } from './otel.js';

/** What a tool call's span reads of the call when it ends. */
export interface CallFacts {
  /** The call's state value (its stage, or the final state it reached). */
  stage: string;
  /** The status of its receipt, or `none`. */
  receipt: string;
}

const TRACER_NAME = 'cairn';
const CONTENT_LIMIT = 4096;

/** Refuses a `tracing` option of the wrong shape. */
export function checkTracing(value: unknown): void {
  if (value === undefined || value === false) return;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidOptionsError('tracing must be false or an object { tracer?, recordContent? }.');
  }
  const { tracer, recordContent } = value as { tracer?: unknown; recordContent?: unknown };
  if (tracer !== undefined && (tracer === null || typeof (tracer as { startSpan?: unknown }).startSpan !== 'function')) {
    throw new InvalidOptionsError('tracing.tracer must be an OpenTelemetry Tracer (an object with startSpan).');
  }
  if (recordContent !== undefined && typeof recordContent !== 'boolean') throw new InvalidOptionsError('tracing.recordContent must be a boolean.');
}

const content = (value: unknown): string => {
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  return redactSecrets(text).slice(0, CONTENT_LIMIT);
};

/** A model call's span; the host ends it with the answer or the failure. */
export interface ModelCallSpan {
  answered(model: string, response: { finishReason: string; usage: Usage; text: string; response?: { id?: string; modelId?: string } }): void;
  failed(error: unknown): void;
}

export class LegTracer {
  private readonly run: SpanLike;
  private readonly runContext: unknown;
  private step: { span: SpanLike; context: unknown; number: number } | null = null;
  private readonly calls = new Map<string, SpanLike>();
  private readonly ended = new Map<string, CallFacts>();

  private constructor(
    private readonly api: OtelApi,
    private readonly tracer: TracerLike,
    private readonly recordContent: boolean,
    runId: string,
    resumed: boolean,
    previous: SpanContextLike | null,
  ) {
    this.run = tracer.startSpan('cairn.run', {
      kind: KIND_INTERNAL,
      attributes: { 'cairn.run.id': runId, 'cairn.run.resumed': resumed, 'gen_ai.operation.name': 'invoke_agent' },
      ...(previous ? { links: [{ context: previous, attributes: { 'cairn.link': 'previous-leg' } }] } : {}),
    }, api.context.active());
    this.runContext = api.trace.setSpan(api.context.active(), this.run);
  }

  /**
   * The tracer of a leg, or null when tracing is off (`tracing: false`) or the
   * API is not installed. `stored` is the record the leg goes on from.
   */
  static start(option: TracingOptions | false | undefined, runId: string, stored: AgentRunEnvelope | undefined): LegTracer | null {
    if (option === false) return null;
    const api = otelApi();
    if (!api) return null;
    const tracer = option?.tracer ?? api.trace.getTracer(TRACER_NAME);
    const leg = new LegTracer(api, tracer, option?.recordContent === true, runId, stored !== undefined, storedSpanContext(stored?.trace));
    // A tracer with no SDK behind it records nothing: the leg then costs one no-op span and keeps no state.
    return leg.run.isRecording() ? leg : (leg.run.end(), null);
  }

  /** The span context a save records, so that the next leg links to this one. */
  trace(): StoredTrace {
    const { traceId, spanId } = this.run.spanContext();
    return { traceId, spanId };
  }

  /** Where a call that just ended stands; its `tool-call-end` event follows. */
  callEnded(step: number, toolCallId: string, facts: CallFacts): void {
    this.ended.set(`${step}:${toolCallId}`, { stage: facts.stage, receipt: facts.receipt });
  }

  /** Follows the leg's events: steps and tool calls. */
  event(event: AgentEvent<unknown>): void {
    switch (event.type) {
      case 'step-start':
        this.endStep();
        this.startStep(event.step, event.phase);
        return;
      case 'tool-call-start': {
        const span = this.tracer.startSpan(`execute_tool ${event.toolName}`, {
          kind: KIND_INTERNAL,
          attributes: {
            'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': event.toolName, 'gen_ai.tool.call.id': event.toolCallId,
            'cairn.step': event.step,
            ...(this.recordContent ? { 'cairn.tool.arguments': content(event.args) } : {}),
          },
        }, this.parentOf(event.step));
        this.calls.set(`${event.step}:${event.toolCallId}`, span);
        return;
      }
      case 'tool-call-end': {
        const key = `${event.step}:${event.toolCallId}`;
        // A call a restored leg finishes was announced by an earlier leg: its span here covers this leg's part.
        const span = this.calls.get(key) ?? this.tracer.startSpan(`execute_tool ${event.toolName}`, {
          kind: KIND_INTERNAL,
          attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': event.toolName, 'gen_ai.tool.call.id': event.toolCallId, 'cairn.step': event.step },
        }, this.parentOf(event.step));
        this.calls.delete(key);
        const known = this.ended.get(key);
        this.ended.delete(key);
        span.setAttributes({
          'cairn.tool.outcome': event.outcome ?? 'completed',
          'cairn.tool.is_error': event.isError,
          ...(known ? { 'cairn.tool.stage': known.stage, 'cairn.tool.receipt': known.receipt } : {}),
          ...(this.recordContent ? { 'cairn.tool.output': content(event.output) } : {}),
        });
        if (event.outcome === 'failed') span.setStatus({ code: STATUS_ERROR, message: 'The tool call failed.' });
        span.end();
        return;
      }
      default:
    }
  }

  /** A model call of the current step. */
  modelCall(step: number, phase: 'loop' | 'finalize'): ModelCallSpan {
    const span = this.tracer.startSpan('chat', {
      kind: KIND_CLIENT,
      attributes: { 'gen_ai.operation.name': 'chat', 'cairn.step': step, 'cairn.step.phase': phase },
    }, this.parentOf(step));
    return {
      answered: (model, answer) => {
        const colon = model.indexOf(':');
        const [system, modelId] = colon > 0 ? [model.slice(0, colon), model.slice(colon + 1)] : ['unknown', model];
        span.updateName(`chat ${modelId}`);
        span.setAttributes({
          'gen_ai.system': system,
          'gen_ai.request.model': modelId,
          'gen_ai.response.model': answer.response?.modelId,
          'gen_ai.response.id': answer.response?.id,
          'gen_ai.response.finish_reasons': [answer.finishReason],
          'gen_ai.usage.input_tokens': answer.usage.inputTokens,
          'gen_ai.usage.output_tokens': answer.usage.outputTokens,
          ...(this.recordContent ? { 'gen_ai.output.text': content(answer.text) } : {}),
        });
        span.setStatus({ code: STATUS_OK });
        span.end();
      },
      failed: (error) => {
        span.setStatus({ code: STATUS_ERROR, message: redactSecrets(error instanceof Error ? error.message : String((error as { message?: unknown })?.message ?? error)) });
        span.end();
      },
    };
  }

  /** A store save: `write` is the save itself, whose outcome the span records. */
  async save<R>(envelope: AgentRunEnvelope, write: () => Promise<R>): Promise<R> {
    const span = this.tracer.startSpan('cairn.save', {
      kind: KIND_CLIENT,
      attributes: { 'cairn.save.revision': envelope.revision, 'cairn.run.status': envelope.status },
    }, this.step?.context ?? this.runContext);
    try {
      const out = await write();
      span.setStatus({ code: STATUS_OK });
      return out;
    } catch (error) {
      span.setStatus({ code: STATUS_ERROR, message: redactSecrets(error instanceof Error ? error.message : String(error)) });
      throw error;
    } finally {
      span.end();
    }
  }

  /** Ends every span of the leg: the calls still open (they wait, or the leg stopped) with their stage, then the run. */
  end(result: AgentResult<unknown>, open: () => Map<string, CallFacts & { step: number; toolCallId: string }>): void {
    for (const call of open().values()) {
      const span = this.calls.get(`${call.step}:${call.toolCallId}`);
      if (!span) continue;
      span.setAttributes({ 'cairn.tool.stage': call.stage, 'cairn.tool.receipt': call.receipt, 'cairn.tool.outcome': 'open' });
      span.end();
      this.calls.delete(`${call.step}:${call.toolCallId}`);
    }
    for (const span of this.calls.values()) span.end();
    this.calls.clear();
    this.endStep();
    const attributes: Attributes = { 'cairn.run.status': result.status, 'cairn.run.steps': result.steps };
    if (result.status === 'stopped') attributes['cairn.run.stop_reason'] = result.reason;
    if (result.status === 'failed') attributes['cairn.run.error_code'] = result.error.code;
    this.run.setAttributes(attributes);
    this.run.setStatus(result.status === 'failed' ? { code: STATUS_ERROR, message: result.error.code } : { code: STATUS_OK });
    this.run.end();
  }

  private startStep(step: number, phase: 'loop' | 'finalize'): void {
    const span = this.tracer.startSpan('cairn.step', { kind: KIND_INTERNAL, attributes: { 'cairn.step': step, 'cairn.step.phase': phase } }, this.runContext);
    this.step = { span, context: this.api.trace.setSpan(this.runContext, span), number: step };
  }

  private endStep(): void {
    this.step?.span.end();
    this.step = null;
  }

  /** The context a span of `step` starts in: the step's span while it is open, else the run's. */
  private parentOf(step: number): unknown {
    return this.step && this.step.number === step ? this.step.context : this.runContext;
  }
}
