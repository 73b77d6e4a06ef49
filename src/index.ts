/**
 * `cairn`: the product surface. An Agent (a configuration of the native
 * engine of `cairn/agent`), its tools, a Runner that keeps a user's
 * conversation across turns in a session service, and the state a run returns.
 * See docs/agent-class.md.
 *
 * @example
 * ```ts
 * import { Agent, tool } from 'cairn';
 * const agent = new Agent({ model, instructions: 'Be brief.', tools: { lookup } });
 * const { outputText, state } = await agent.run({ prompt: 'Check account acct_123.' });
 * ```
 */
export * from './sdk/index.js';
export * from './sessions/index.js';
export * from './evidence/index.js';
export { CairnError, InvalidOptionsError } from './errors/index.js';
export * from './delegation/index.js';
export type { AgentRunStore, ApprovalResponse, Message } from './agent/types.js';
