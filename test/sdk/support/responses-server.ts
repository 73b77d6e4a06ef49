/**
 * A scripted model behind the OpenAI Responses wire, on 127.0.0.1: what a
 * program configured with `OPENAI_BASE_URL=<url>/<script>/v1` talks to
 * instead of api.openai.com. Each script is a list of turns (text, tool
 * calls, or a hang that never answers), served in order to the requests under
 * its path, streamed as the Responses API streams them (or as one JSON body
 * when a request does not ask to stream). Ids are derived from the script and
 * turn, so every run of a program gets byte-identical answers. No test
 * reaches the internet.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ScriptTurn =
  | { text: string; usage?: { input: number; output: number } }
  | { toolCalls: { name: string; args: unknown }[]; usage?: { input: number; output: number } }
  /** Never answers: a process killed while it waits on the model. */
  | { hang: true };

export interface RecordedResponsesRequest {
  script: string;
  authorization: string | undefined;
  body: { model?: string; input?: unknown[]; tools?: { name: string; parameters: unknown }[]; stream?: boolean; [key: string]: unknown };
}

export interface ResponsesServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** `OPENAI_BASE_URL` for a script. */
  baseURL(script: string): string;
  requests: RecordedResponsesRequest[];
  /** Replaces (or adds) a script and starts it from its first turn. */
  script(name: string, turns: ScriptTurn[]): void;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

function outputOf(script: string, turn: number, t: Exclude<ScriptTurn, { hang: true }>): Json[] {
  if ('text' in t) {
    return [{
      id: `msg_${script}_${turn}`, type: 'message', status: 'completed', role: 'assistant',
      content: [{ type: 'output_text', text: t.text, annotations: [] }],
    }];
  }
  return t.toolCalls.map((c, i) => ({
    id: `fc_${script}_${turn}_${i}`, type: 'function_call', status: 'completed',
    call_id: `call_${script}_${turn}_${i}`, name: c.name, arguments: JSON.stringify(c.args),
  }));
}

function responseOf(script: string, turn: number, model: string, output: Json[], t: Exclude<ScriptTurn, { hang: true }>, status: string): Json {
  const usage = t.usage ?? { input: 10, output: 5 };
  return {
    id: `resp_${script}_${turn}`, object: 'response', created_at: 1_767_225_600, status, model, output,
    usage: status === 'completed' ? { input_tokens: usage.input, output_tokens: usage.output, total_tokens: usage.input + usage.output } : null,
  };
}

/** The SSE events of one turn, in the order the Responses API sends them. */
function eventsOf(script: string, turn: number, model: string, t: Exclude<ScriptTurn, { hang: true }>): Json[] {
  const output = outputOf(script, turn, t);
  const events: Json[] = [{ type: 'response.created', response: responseOf(script, turn, model, [], t, 'in_progress') }];
  output.forEach((item, index) => {
    if (item.type === 'message') {
      events.push({ type: 'response.output_item.added', output_index: index, item: { ...item, status: 'in_progress', content: [] } });
      events.push({ type: 'response.output_text.delta', item_id: item.id, output_index: index, content_index: 0, delta: (t as { text: string }).text });
    } else {
      events.push({ type: 'response.output_item.added', output_index: index, item: { ...item, status: 'in_progress', arguments: '' } });
      events.push({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index: index, delta: item.arguments });
    }
    events.push({ type: 'response.output_item.done', output_index: index, item });
  });
  events.push({ type: 'response.completed', response: responseOf(script, turn, model, output, t, 'completed') });
  return events.map((e, i) => ({ ...e, sequence_number: i }));
}

async function readJson(req: IncomingMessage): Promise<Json> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
  } catch {
    return {};
  }
}

export async function startResponsesServer(scripts: Record<string, ScriptTurn[]> = {}): Promise<ResponsesServer> {
  const turns = new Map<string, { list: ScriptTurn[]; next: number }>();
  for (const [name, list] of Object.entries(scripts)) turns.set(name, { list, next: 0 });
  const requests: RecordedResponsesRequest[] = [];
  const hanging = new Set<ServerResponse>();

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const match = /^\/([A-Za-z0-9_-]+)\/v1\/responses$/.exec(req.url ?? '');
    const body = await readJson(req);
    if (!match || req.method !== 'POST') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    const name = match[1]!;
    requests.push({ script: name, authorization: req.headers.authorization, body: body as RecordedResponsesRequest['body'] });
    const script = turns.get(name);
    const turn = script?.list[script.next];
    if (!script || !turn) {
      res.writeHead(500, { 'content-type': 'application/json' }).end(`{"error":{"message":"script ${name} has no turn left"}}`);
      return;
    }
    const index = script.next++;
    if ('hang' in turn) {
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
      return;
    }
    const model = typeof body.model === 'string' ? body.model : 'unknown';
    if (body.stream !== true) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(responseOf(name, index, model, outputOf(name, index, turn), turn, 'completed')));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const event of eventsOf(name, index, model, turn)) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    res.end();
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    baseURL: (script) => `${url}/${script}/v1`,
    requests,
    script(name, list) {
      turns.set(name, { list, next: 0 });
    },
    close: () => new Promise<void>((resolve) => {
      for (const res of hanging) res.destroy();
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
