/**
 * The part of the OpenTelemetry API that Cairn uses, declared here so that
 * nothing Cairn publishes names `@opentelemetry/api`: it is an optional peer,
 * loaded on first use, and tracing is a no-op when it is not installed.
 */
import { createRequire } from 'node:module';

export type AttributeValue = string | number | boolean | string[] | number[] | boolean[];
export type Attributes = Record<string, AttributeValue | undefined>;

/** The `tracing` option of a run. */
export interface TracingOptions {
  /** The tracer to use. @default the global tracer provider's `cairn` tracer (a no-op until an SDK is registered) */
  tracer?: TracerLike;
  /**
   * Put tool arguments and results (`cairn.tool.arguments`, `cairn.tool.output`) and the model's answer text
   * (`gen_ai.output.text`) on the spans, secrets redacted, at most 4,096 characters each. @default false
   */
  recordContent?: boolean;
}

/** The span context a record keeps of the leg that saved it. */
export interface StoredTrace {
  traceId: string;
  spanId: string;
}

/** What identifies a span across processes. */
export interface SpanContextLike {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
}

/** The calls Cairn makes on a span. Any OpenTelemetry `Span` fits. */
export interface SpanLike {
  setAttribute(key: string, value: AttributeValue): unknown;
  setAttributes(attributes: Attributes): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  updateName(name: string): unknown;
  end(): void;
  isRecording(): boolean;
  spanContext(): SpanContextLike;
}

export interface SpanOptionsLike {
  kind?: number;
  attributes?: Attributes;
  links?: { context: SpanContextLike; attributes?: Attributes }[];
}

/** A tracer: any OpenTelemetry `Tracer` fits (`trace.getTracer('my-service')`). */
export interface TracerLike {
  startSpan(name: string, options?: SpanOptionsLike, context?: unknown): SpanLike;
}

/** The members of the API module Cairn reads. */
export interface OtelApi {
  trace: {
    getTracer(name: string, version?: string): TracerLike;
    setSpan(context: unknown, span: SpanLike): unknown;
  };
  context: { active(): unknown };
}

/** OpenTelemetry's status codes and span kinds (stable values of the specification). */
export const STATUS_OK = 1;
export const STATUS_ERROR = 2;
export const KIND_INTERNAL = 0;
export const KIND_CLIENT = 2;

let loaded: OtelApi | null | undefined;

/**
 * The OpenTelemetry API when the application has it installed, else null.
 * Loaded once; `load` is the test seam for an absent package.
 */
export function otelApi(load: () => unknown = defaultLoad): OtelApi | null {
  if (loaded !== undefined && load === defaultLoad) return loaded;
  let api: OtelApi | null = null;
  try {
    const module = load() as Partial<OtelApi> | null | undefined;
    if (module && typeof module.trace?.getTracer === 'function' && typeof module.context?.active === 'function') api = module as OtelApi;
  } catch {
    api = null;
  }
  if (load === defaultLoad) loaded = api;
  return api;
}

function defaultLoad(): unknown {
  // The API keeps its registered provider on a global, so this copy sees the one the application set up.
  return createRequire(import.meta.url)('@opentelemetry/api');
}

const HEX_TRACE = /^[0-9a-f]{32}$/;
const HEX_SPAN = /^[0-9a-f]{16}$/;

/** A span context read from a stored record, if it has the shape of a valid one (all-zero ids are invalid). */
export function storedSpanContext(value: unknown): SpanContextLike | null {
  if (value === null || typeof value !== 'object') return null;
  const { traceId, spanId } = value as { traceId?: unknown; spanId?: unknown };
  if (typeof traceId !== 'string' || typeof spanId !== 'string') return null;
  if (!HEX_TRACE.test(traceId) || !HEX_SPAN.test(spanId) || /^0+$/.test(traceId) || /^0+$/.test(spanId)) return null;
  return { traceId, spanId, traceFlags: 1, isRemote: true };
}
