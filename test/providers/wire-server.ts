/**
 * A local HTTP server on 127.0.0.1 that replays wire fixtures (JSON bodies,
 * SSE chunk sequences, failures) in order and records every request, so a
 * provider test can assert the exact request the adapter sent and what it
 * made of the answer. No test reaches the internet.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeEach } from 'vitest';

export interface WireReply {
  /** @default 200 */
  status?: number;
  headers?: Record<string, string>;
  /** A JSON body. */
  json?: unknown;
  /** A raw body (malformed JSON, for example). */
  body?: string;
  /**
   * An SSE body: each entry is one event, written as its own chunk. A string is
   * sent as the `data:` line as it is; an object is sent as JSON; `{ event, data }`
   * adds an `event:` line. `'[DONE]'` is sent as it is.
   */
  sse?: Array<string | { event?: string; data: unknown } | Record<string, unknown>>;
  /** Raw chunks written one by one (to split an event across chunks). */
  chunks?: string[];
  /** With `sse` or `chunks`: destroy the socket after this many chunks (a stream cut mid-way). */
  cutAfter?: number;
  /** Never answer (the test's transport timeout must end the call). */
  hang?: boolean;
  /** Send the status and headers, then nothing more, keeping the connection open. */
  headersOnly?: boolean;
  /** With `sse` or `chunks`: after this many chunks, send nothing more and keep the connection open (a stalled stream). */
  stallAfter?: number;
  /** With `body` or `json`: declare the whole length, send only this many characters, then destroy the socket. */
  cutBodyAt?: number;
  /** Wait before answering, ms. */
  delayMs?: number;
}

export interface RecordedRequest {
  method: string;
  /** Path with query string. */
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The body parsed as JSON, or the raw text when it is not JSON. */
  body: unknown;
}

export interface WireServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Replies still to be served, in order; push more at any time. */
  replies: WireReply[];
  /** Every request served so far. */
  requests: RecordedRequest[];
  /** Queues replies. */
  reply(...replies: WireReply[]): void;
  /** Answers a request when no reply is queued (a reply computed from the request). */
  handler: ((request: RecordedRequest) => WireReply) | undefined;
  close(): Promise<void>;
}

function sseChunk(entry: string | { event?: string; data: unknown } | Record<string, unknown>): string {
  if (typeof entry === 'string') return `data: ${entry}\n\n`;
  // `{ data }` or `{ event, data }` is an event; any other object is the event's data, as JSON.
  const keys = Object.keys(entry);
  const framed = keys.includes('data') && keys.every((k) => k === 'data' || k === 'event');
  if (!framed) return `data: ${JSON.stringify(entry)}\n\n`;
  const event = entry as { event?: string; data: unknown };
  const data = typeof event.data === 'string' ? event.data : JSON.stringify(event.data);
  return `${event.event !== undefined ? `event: ${event.event}\n` : ''}data: ${data}\n\n`;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function serve(reply: WireReply, res: ServerResponse): Promise<void> {
  if (reply.hang) return; // the socket stays open until the client gives up or the server closes
  if (reply.delayMs) await pause(reply.delayMs);
  const status = reply.status ?? 200;
  if (reply.headersOnly) {
    res.writeHead(status, { 'content-type': 'text/event-stream', ...reply.headers });
    res.flushHeaders();
    return;
  }
  const streamed = reply.sse ?? reply.chunks;
  if (streamed) {
    res.writeHead(status, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...reply.headers });
    const chunks = reply.sse ? reply.sse.map(sseChunk) : reply.chunks!;
    for (let i = 0; i < chunks.length; i++) {
      if (reply.stallAfter !== undefined && i >= reply.stallAfter) return;
      if (reply.cutAfter !== undefined && i >= reply.cutAfter) {
        res.socket?.destroy();
        return;
      }
      res.write(chunks[i]);
      // Let each chunk leave on its own, so the client sees the pieces.
      await pause(1);
    }
    if (reply.cutAfter !== undefined && reply.cutAfter >= chunks.length) {
      res.socket?.destroy();
      return;
    }
    res.end();
    return;
  }
  const body = reply.body ?? (reply.json !== undefined ? JSON.stringify(reply.json) : '');
  const type = reply.body !== undefined ? 'text/plain' : 'application/json';
  if (reply.cutBodyAt !== undefined) {
    res.writeHead(status, { 'content-type': type, 'content-length': String(Buffer.byteLength(body)), ...reply.headers });
    res.write(body.slice(0, reply.cutBodyAt));
    await pause(5);
    res.socket?.destroy();
    return;
  }
  res.writeHead(status, { 'content-type': type, ...reply.headers });
  res.end(body);
}

export async function startWireServer(): Promise<WireServer> {
  const replies: WireReply[] = [];
  const requests: RecordedRequest[] = [];
  const wire: WireServer = {
    url: '',
    replies,
    requests,
    reply: (...more) => void replies.push(...more),
    handler: undefined,
    close: async () => undefined,
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries(req.headers)) if (typeof value === 'string') headers[key] = value;
      requests.push({ method: req.method ?? 'GET', path: req.url ?? '/', headers, body });
      const reply = replies.shift() ?? wire.handler?.(requests[requests.length - 1]!);
      if (!reply) {
        res.writeHead(599, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'wire server: no reply queued' } }));
        return;
      }
      await serve(reply, res);
    })().catch(() => res.socket?.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  Object.assign(wire, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  });
  return wire;
}

/** A key that must never show up anywhere a user or a log can see. */
export const CANARY_KEY = 'sk-canary-7f3a9c2e41d84b6b9e0f5a1c';

/** Collects everything that leaves a call: the error's own fields, its message, its JSON, its cause chain. */
export function visibleText(...values: unknown[]): string {
  const seen = new Set<unknown>();
  const out: string[] = [];
  const walk = (value: unknown, depth: number) => {
    if (depth > 6 || value === null || value === undefined || seen.has(value)) return;
    if (typeof value !== 'object') {
      out.push(String(value));
      return;
    }
    seen.add(value);
    if (value instanceof Error) {
      out.push(value.message, value.stack ?? '', String(value));
      walk((value as { cause?: unknown }).cause, depth + 1);
    }
    try {
      out.push(JSON.stringify(value));
    } catch {
      // circular: the walk below still reads its fields
    }
    for (const key of Object.getOwnPropertyNames(value)) walk((value as Record<string, unknown>)[key], depth + 1);
  };
  for (const value of values) walk(value, 0);
  return out.join('\n');
}

/**
 * A server for one test file: started now, emptied before each test (no
 * recorded requests, no queued replies, no handler), closed after the file's last.
 */
export async function wireServerForFile(): Promise<WireServer> {
  const server = await startWireServer();
  afterAll(() => server.close());
  beforeEach(() => {
    server.requests.length = 0;
    server.replies.length = 0;
    server.handler = undefined;
  });
  return server;
}
