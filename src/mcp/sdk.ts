/**
 * @modelcontextprotocol/sdk, loaded on first use: it is an optional peer
 * dependency, and a run without `mcp` never imports it. @internal
 */
import { McpError } from './errors.js';

type ClientModule = typeof import('@modelcontextprotocol/sdk/client/index.js');
type StdioModule = typeof import('@modelcontextprotocol/sdk/client/stdio.js');
type HttpModule = typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js');
type TypesModule = typeof import('@modelcontextprotocol/sdk/types.js');

export interface McpSdk {
  Client: ClientModule['Client'];
  StdioClientTransport: StdioModule['StdioClientTransport'];
  StreamableHTTPClientTransport: HttpModule['StreamableHTTPClientTransport'];
  types: TypesModule;
}

export type SdkClient = InstanceType<ClientModule['Client']>;
export type SdkTool = Awaited<ReturnType<SdkClient['listTools']>>['tools'][number];
export type SdkCallResult = import('@modelcontextprotocol/sdk/types.js').CallToolResult;
export type SdkCreateMessageRequest = import('@modelcontextprotocol/sdk/types.js').CreateMessageRequest;
export type SdkCreateMessageResult = import('@modelcontextprotocol/sdk/types.js').CreateMessageResult;

let loading: Promise<McpSdk> | null = null;

/** The SDK's client pieces, imported once per process. */
export function loadMcpSdk(server: string): Promise<McpSdk> {
  loading ??= (async () => {
    const [client, stdio, http, types] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/stdio.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
      import('@modelcontextprotocol/sdk/types.js'),
    ]);
    return {
      Client: client.Client,
      StdioClientTransport: stdio.StdioClientTransport,
      StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
      types,
    };
  })();
  return loading.catch((error) => {
    loading = null;
    throw new McpError(
      'mcp_unavailable', server,
      'The mcp option needs @modelcontextprotocol/sdk, which is not installed: npm install @modelcontextprotocol/sdk',
      { cause: error },
    );
  });
}
