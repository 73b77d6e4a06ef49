/**
 * The session's four tools. Each write commits under the operation id of its
 * call (`<runId>:memory:<modelStep>:<toolCallId>`), so the same call run
 * again after a crash (same step, same call id, same arguments) finds the
 * receipt of its first run and answers it, and nothing is applied twice.
 * The answers are plain JSON: ids and numbers for a write, and the recalled
 * texts for memory_recall.
 */
import type { AgentTool, ToolExecuteContext } from '../../agent/tool-types.js';
import type { MemorySession, VersionedMemoryCommitResult } from './types.js';

/** What a write tool answers: the record it wrote, at which revision, and whether the receipt was a replay. */
export interface MemoryToolWriteAnswer {
  id: string;
  revision: number;
  scopeRevision: number;
  replayed: boolean;
}

const answerOf = (result: VersionedMemoryCommitResult): MemoryToolWriteAnswer => {
  const [written] = result.receipt.records;
  return {
    id: written?.id ?? '',
    revision: written?.revision ?? result.receipt.scopeRevision,
    scopeRevision: result.receipt.scopeRevision,
    replayed: result.replayed,
  };
};

const strict = (properties: Record<string, unknown>, required: string[]) =>
  ({ type: 'object', properties, required, additionalProperties: false }) as const;

/** The tools of a session, for one run. */
export function sessionTools(session: MemorySession, runId: string): Record<'memory_remember' | 'memory_recall' | 'memory_revise' | 'memory_retract', AgentTool> {
  const operationId = (ctx: ToolExecuteContext) => session.operationId({ kind: 'tool', runId, modelStep: ctx.modelStep, toolCallId: ctx.toolCallId });
  return {
    memory_remember: {
      description: 'Save a fact about the user in long-term memory (one short sentence). Answers the new record\'s id and revision.',
      parameters: strict({ text: { type: 'string', minLength: 1 } }, ['text']),
      replay: 'idempotent',
      execute: async (args: { text: string }, ctx) => answerOf(await session.remember({ text: args?.text, operationId: operationId(ctx) })),
    },
    memory_recall: {
      description: 'Search long-term memory for facts about the user. Answers the closest records, best first, with their ids.',
      parameters: strict({ query: { type: 'string', minLength: 1 }, limit: { type: 'integer', minimum: 1, maximum: 50 } }, ['query']),
      replay: 'idempotent',
      execute: async (args: { query: string; limit?: number }) => {
        const hits = await session.recall({ text: args?.query, ...(args?.limit !== undefined ? { limit: args.limit } : {}) });
        return hits.map((h) => ({ id: h.record.id, revision: h.record.revision, text: h.record.text, score: h.score }));
      },
    },
    memory_revise: {
      description: 'Replace the text of a fact in long-term memory, by its id (a retracted fact cannot be revised).',
      parameters: strict({ id: { type: 'string', minLength: 1 }, text: { type: 'string', minLength: 1 } }, ['id', 'text']),
      replay: 'idempotent',
      execute: async (args: { id: string; text: string }, ctx) => answerOf(await session.revise({ id: args?.id, text: args?.text, operationId: operationId(ctx) })),
    },
    memory_retract: {
      description: 'Retract a fact in long-term memory, by its id: it is kept in the history but no longer recalled.',
      parameters: strict({ id: { type: 'string', minLength: 1 } }, ['id']),
      replay: 'idempotent',
      execute: async (args: { id: string }, ctx) => answerOf(await session.retract({ id: args?.id, operationId: operationId(ctx) })),
    },
  };
}
