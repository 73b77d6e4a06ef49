/**
 * The web example's server (node:http) with cairn/ui's native route:
 *
 * - POST /api/agent `{ prompt }` starts a run; `{ runId, approvalResponses,
 *   clientToolResults }` resumes one with every answer in one request. Both
 *   answer with `toAgentStreamResponse`, journaled so a client can come back.
 * - GET /api/agent?runId=&cursor= (or Last-Event-ID) answers with
 *   `resumeAgentStreamResponse`: the frames after the cursor, then the live leg.
 * - GET /api/chart?runId= answers with the stored run on its charts
 *   (`renderRunChartHtml` from cairn/machines), for a run of this server's scope.
 * - Everything else serves the built page.
 *
 * npm run example:web                        scripted model, no key
 * OPENAI_API_KEY=... npm run example:web     a real model (OPENAI_MODEL, default gpt-4.1-mini)
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createInMemoryAgentRunStore, resumeStreamAgent, RunIdentityError, streamAgent, type AgentRunStore, type ApprovalResponse,
  type ClientToolResult, type LanguageModel,
} from 'cairn/agent';
import { renderRunChartHtml } from 'cairn/machines';
import {
  createInMemoryAgentStreamJournal, resumeAgentStreamResponse, toAgentStreamResponse, type AgentStreamJournal,
} from 'cairn/ui';
import { agentOptions, scriptedModel } from './agent.js';

/** One call to the native route, as the server read it. */
export interface ApiRequestRecord {
  method: 'GET' | 'POST';
  /** Path and query. */
  url: string;
  /** The parsed JSON body of a POST. */
  body?: unknown;
}

export interface WebExampleOptions {
  /** Where the built page is (see {@link buildPage}). */
  distDir: string;
  /** @default the scripted model */
  model?: LanguageModel;
  /** Milliseconds between the scripted model's words. @default 120 */
  wordDelayMs?: number;
  /** Where runs are kept. @default a new in-memory store */
  runs?: AgentRunStore;
  /** Where the wire frames are kept for replay. @default a new in-memory journal */
  journal?: AgentStreamJournal;
  /** Told of every call to the native route (the browser test counts the resumes with it). */
  onApiRequest?: (request: ApiRequestRecord) => void;
}

/** Every run of this server is in one scope; a real app would use the signed-in user's or tenant's. */
const SCOPE = 'web-example';
const MAX_BODY_BYTES = 64 * 1024;
/** The chart page carries the same policy in a meta tag; the header holds it for every browser. */
const CHART_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

export function createWebExampleServer(options: WebExampleOptions): Server {
  const runs = options.runs ?? createInMemoryAgentRunStore();
  const journal = options.journal ?? createInMemoryAgentStreamJournal();
  const model = options.model ?? scriptedModel(options.wordDelayMs ?? 120);
  const distDir = resolve(options.distDir);
  const session = (runId: string) => ({ store: runs, runId, scope: SCOPE });

  const start = (prompt: string): Response => {
    const runId = `web-${randomUUID()}`;
    const stream = streamAgent({ ...agentOptions(model), prompt, session: session(runId) });
    return toAgentStreamResponse(stream, { runId, store: journal, scope: SCOPE });
  };

  const resume = (runId: string, approvalResponses: ApprovalResponse[], clientToolResults: ClientToolResult[]): Response => {
    // A resume the run refuses (unknown run, another leg running, an answer missing) goes out on this response alone.
    const stream = resumeStreamAgent({ ...agentOptions(model), session: session(runId), approvalResponses, clientToolResults });
    return toAgentStreamResponse(stream, { runId, store: journal, scope: SCOPE });
  };

  const api = async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<Response> => {
    if (req.method === 'GET') {
      options.onApiRequest?.({ method: 'GET', url: url.pathname + url.search });
      const runId = url.searchParams.get('runId');
      if (!runId) return jsonError(400, 'runId is required.');
      return resumeAgentStreamResponse({ store: journal, streamId: runId, scope: SCOPE, request: toWebRequest(req, res, url) });
    }
    if (req.method !== 'POST') return jsonError(405, 'Use GET or POST.');
    const body = await readJson(req);
    options.onApiRequest?.({ method: 'POST', url: url.pathname + url.search, body });
    if (!isRecord(body)) return jsonError(400, 'The body must be a JSON object.');
    if (body.runId !== undefined) {
      if (typeof body.runId !== 'string' || body.runId === '') return jsonError(400, 'runId must be a non-empty string.');
      const approvals = body.approvalResponses ?? [];
      const results = body.clientToolResults ?? [];
      if (!Array.isArray(approvals) || !Array.isArray(results)) return jsonError(400, 'approvalResponses and clientToolResults must be arrays.');
      // The engine checks each answer against the run's pending calls.
      return resume(body.runId, approvals as ApprovalResponse[], results as ClientToolResult[]);
    }
    if (typeof body.prompt !== 'string' || body.prompt.trim() === '') return jsonError(400, 'prompt must be a non-empty string.');
    return start(body.prompt);
  };

  /**
   * The stored run on its charts. A run of another scope answers as a missing one does, so the
   * page cannot tell another tenant's run ids from unused ones.
   */
  const chart = async (req: IncomingMessage, url: URL): Promise<Response> => {
    if (req.method !== 'GET') return jsonError(405, 'Use GET.');
    const runId = url.searchParams.get('runId');
    if (!runId) return jsonError(400, 'runId is required.');
    const envelope = await runs.load(runId, { scope: SCOPE }).catch((error: unknown) => {
      if (RunIdentityError.isInstance(error)) return undefined;
      throw error;
    });
    if (envelope === undefined) return jsonError(404, `There is no run ${runId}.`);
    return new Response(renderRunChartHtml(envelope), {
      headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-security-policy': CHART_CSP },
    });
  };

  return createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const answer = url.pathname === '/api/agent' ? api(req, res, url)
      : url.pathname === '/api/chart' ? chart(req, url)
      : serveFile(distDir, url.pathname);
    answer
      .catch((error: unknown) => (error instanceof BadRequest ? jsonError(400, error.message) : jsonError(500, 'The server failed.')))
      .then((response) => sendResponse(res, response))
      .catch(() => res.destroy());
  });
}

class BadRequest extends Error {}

/**
 * Writes a web `Response` to node:http: status, headers, then the body chunk
 * by chunk as it comes (an SSE body stays open while the run streams). When
 * the client goes away the body is cancelled; the run goes on and its frames
 * still go to the journal.
 */
export async function sendResponse(res: ServerResponse, response: Response): Promise<void> {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) {
    res.end();
    return;
  }
  res.flushHeaders();
  const reader = response.body.getReader();
  res.on('close', () => void reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || res.destroyed) break;
      if (!res.write(value)) await new Promise((resolve) => res.once('drain', resolve).once('close', resolve));
    }
  } catch {
    // The client left mid-body (the read was cancelled).
  } finally {
    res.end();
  }
}

/** The parts of a node request that resumeAgentStreamResponse reads (url, Last-Event-ID), with a signal that aborts when the client leaves. */
function toWebRequest(req: IncomingMessage, res: ServerResponse, url: URL): Request {
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  const headers = new Headers();
  const lastEventId = req.headers['last-event-id'];
  if (typeof lastEventId === 'string') headers.set('last-event-id', lastEventId);
  return new Request(url, { headers, signal: abort.signal });
}

function jsonError(status: number, message: string): Response {
  return Response.json({ error: { message } }, { status });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new BadRequest(`The body is over ${MAX_BODY_BYTES} bytes.`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new BadRequest('The body is not JSON.');
  }
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml', '.ico': 'image/x-icon',
};

async function serveFile(distDir: string, pathname: string): Promise<Response> {
  const path = resolve(distDir, `.${decodeURIComponent(pathname === '/' ? '/index.html' : pathname)}`);
  if (path !== distDir && !path.startsWith(distDir + sep)) return new Response('not found', { status: 404 });
  const data = await readFile(path).catch(() => null);
  if (!data) return new Response('not found', { status: 404 });
  return new Response(data, { headers: { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream' } });
}

/** Builds the page with Vite into `outDir`, with cairn/ui and cairn/react taken from the sources. */
export async function buildPage(outDir: string): Promise<void> {
  const { build } = await import('vite');
  const here = fileURLToPath(new URL('.', import.meta.url));
  const src = join(here, '../../src');
  await build({
    root: here,
    logLevel: 'warn',
    configFile: false,
    publicDir: false,
    resolve: {
      alias: { 'cairn/react': join(src, 'react/index.ts'), 'cairn/ui': join(src, 'ui/index.ts') },
    },
    build: { outDir, emptyOutDir: true },
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const distDir = join(fileURLToPath(new URL('.', import.meta.url)), 'dist');
  await buildPage(distDir);
  let model: LanguageModel | undefined;
  if (process.env.OPENAI_API_KEY) {
    const { createOpenAI } = await import('cairn/openai');
    model = createOpenAI({ apiKey: process.env.OPENAI_API_KEY })(process.env.OPENAI_MODEL ?? 'gpt-4.1-mini');
  }
  const port = Number(process.env.PORT ?? 5177);
  createWebExampleServer({ distDir, ...(model ? { model } : {}) }).listen(port, '127.0.0.1', () => {
    console.log(`web example on http://127.0.0.1:${port}/ (${model ? `OpenAI ${process.env.OPENAI_MODEL ?? 'gpt-4.1-mini'}` : 'scripted model, no key'})`);
  });
}
