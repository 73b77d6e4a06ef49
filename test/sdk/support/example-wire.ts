/**
 * The model of the docs examples that talk to OpenAI (seed 004's, which run
 * as written): a scripted Responses server on 127.0.0.1, one script per
 * example, reached through OPENAI_BASE_URL. test/docs/examples.test.ts starts
 * it and gives those examples the environment below.
 */
import { startResponsesServer, type ScriptTurn } from './responses-server.js';

export const OPENAI_WIRE_EXAMPLES: Record<string, ScriptTurn[]> = {
  'agent-class': [
    { toolCalls: [{ name: 'lookupAccount', args: { accountId: 'acct_123' } }], usage: { input: 64, output: 18 } },
    { text: 'acct_123 is active on the team plan.', usage: { input: 97, output: 11 } },
  ],
  'agent-runner': [
    { text: 'Noted: short answers.', usage: { input: 40, output: 6 } },
    { text: 'Your account is active.', usage: { input: 58, output: 6 } },
  ],
  'agent-evidence': [
    { toolCalls: [{ name: 'charge', args: { order: 'A-7' } }], usage: { input: 30, output: 12 } },
    { text: 'Order A-7 is charged (receipt rcpt-1).', usage: { input: 52, output: 10 } },
  ],
  'agent-interrupt': [
    { toolCalls: [{ name: 'deploy', args: { target: 'eu-west' } }], usage: { input: 52, output: 14 } },
    { text: 'The release is live in eu-west.', usage: { input: 80, output: 9 } },
  ],
};

export interface ExampleWire {
  /** The environment of an example that talks to the wire, or undefined for any other example. */
  env(example: string): Record<string, string> | undefined;
  close(): Promise<void>;
}

export async function startExampleWire(): Promise<ExampleWire> {
  const server = await startResponsesServer(OPENAI_WIRE_EXAMPLES);
  return {
    env: (example) => (example in OPENAI_WIRE_EXAMPLES
      ? { OPENAI_BASE_URL: server.baseURL(example), OPENAI_API_KEY: 'sk-local-example-key' }
      : undefined),
    close: () => server.close(),
  };
}
