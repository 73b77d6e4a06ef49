// An MCP server over stdio written with the SDK's low-level Server class, which lists tools exactly as given:
// the tests hand it tools whose schemas are not valid JSON Schema, or whose names collide.
//
// Environment:
//   MCP_TOOLS    JSON array of tools as tools/list answers them
//   MCP_RESULTS  JSON object: the result each tool's call answers, by tool name (default: text "<name> ok").
//                Nothing checks a result against its tool's outputSchema here.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const tools = JSON.parse(process.env.MCP_TOOLS ?? '[]');
const results = JSON.parse(process.env.MCP_RESULTS ?? '{}');
const server = new Server({ name: 'raw', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request) =>
  results[request.params.name] ?? { content: [{ type: 'text', text: `${request.params.name} ok` }] });
await server.connect(new StdioServerTransport());
