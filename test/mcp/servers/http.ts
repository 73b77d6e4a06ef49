/**
 * A real MCP server over Streamable HTTP on 127.0.0.1, written with the SDK's
 * McpServer and StreamableHTTPServerTransport, in the test's own process. One
 * McpServer per session. `charge` records that it started and then never
 * answers, so a test can close the server while the call is with it.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

export interface HttpNotes {
  url: string;
  /** Effects, in order: `note <text>`, `charge-started <order>`. */
  effects: string[];
  /** The headers of every request, as received. */
  headers: IncomingMessage['headers'][];
  /** Resolves when a `charge` call has started. */
  chargeStarted: Promise<void>;
  /** Stops at once: every open connection is cut, in-flight calls included. */
  kill(): Promise<void>;
}

function notesServer(effects: string[], started: () => void): McpServer {
  const server = new McpServer({ name: 'http-notes', version: '1.0.0' });
  server.registerTool('add_note', { description: 'Add a note.', inputSchema: { text: z.string() } }, async ({ text }) => {
    effects.push(`note ${text}`);
    return { content: [{ type: 'text', text: `noted: ${text}` }] };
  });
  server.registerTool('charge', { description: 'Charge an order.', inputSchema: { order: z.string() } }, async ({ order }) => {
    effects.push(`charge-started ${order}`);
    started();
    return new Promise(() => undefined);
  });
  return server;
}

async function bodyOf(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : JSON.parse(text);
}

export async function startHttpNotes(port = 0): Promise<HttpNotes> {
  const effects: string[] = [];
  const headers: IncomingMessage['headers'][] = [];
  let markStarted!: () => void;
  const chargeStarted = new Promise<void>((resolve) => (markStarted = resolve));
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    headers.push(req.headers);
    try {
      const body = req.method === 'POST' ? await bodyOf(req) : undefined;
      const id = req.headers['mcp-session-id'];
      let transport = typeof id === 'string' ? transports.get(id) : undefined;
      if (!transport) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sessionId) => void transports.set(sessionId, transport!),
        });
        await notesServer(effects, markStarted).connect(transport);
      }
      await transport.handleRequest(req, res, body);
    } catch (error) {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    }
  });
  await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve));
  const address = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}/mcp`,
    effects,
    headers,
    chargeStarted,
    kill: async () => {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
