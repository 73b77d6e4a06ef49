/**
 * The session's four tools. Each write commits under the operation id of its
 * call (`<runId>:memory:<modelStep>:<toolCallId>`), so the same call run
 * again after a crash (same step, same call id, same arguments) finds the
 * receipt of its first run and answers it, and nothing is applied twice.
 * The answers are plain JSON: ids and numbers for a write, and the recalled
 * texts for memory_recall.
 */
import type { AgentTool, ToolExecuteContext } from '../../agent/tool-types.js';
import type { MemorySession, VersionedMemoryCommitResult, VersionedMemoryReceipt } from './types.js';

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

/** The typed refusals of a write: nothing was applied, so there is no receipt to answer. */
const REFUSALS: ReadonlySet<string> = new Set([
  'memory_scope_invalid', 'memory_record_invalid', 'memory_record_not_found', 'memory_record_exists', 'memory_record_retracted',
  'memory_record_forgotten', 'memory_receipt_mismatch', 'invalid_options',
]);

const strict = (properties: Record<string, unknown>, required: string[]) =>
  ({ type: 'object', properties, required, additionalProperties: false }) as const;

/** The tools of a session, for one run. `onReceipt` hears each write's receipt. */
export function sessionTools(
  session: MemorySession, runId: string, onReceipt?: (receipt: VersionedMemoryReceipt) => void,
): Record<'memory_remember' | 'memory_recall' | 'memory_revise' | 'memory_retract', AgentTool> {
  const operationId = (ctx: ToolExecuteContext) => session.operationId({ kind: 'tool', runId, modelStep: ctx.modelStep, toolCallId: ctx.toolCallId });
  /** One write under the call's operation id; a commit that threw after it landed answers its stored receipt. */
  const write = async (ctx: ToolExecuteContext, commit: (operationId: string) => Promise<VersionedMemoryCommitResult>) => {
    const id = operationId(ctx);
    let result: VersionedMemoryCommitResult;
    try {
      result = await commit(id);
    } catch (error) {
      // A refusal applied nothing and says why; anything else (a lost connection) may have come after the commit landed.
      if (REFUSALS.has((error as { code?: unknown })?.code as string)) throw error;
      const landed = await session.receipt(id).catch(() => undefined);
      if (!landed) throw error;
      result = { receipt: landed, replayed: true };
    }
    onReceipt?.(result.receipt);
    return answerOf(result);
  };
  return {
    memory_remember: {
      description: 'Save a fact about the user in long-term memory (one short sentence). Answers the new record\'s id and revision.',
      parameters: strict({ text: { type: 'string', minLength: 1 } }, ['text']),
      replay: 'idempotent',
      execute: (args: { text: string }, ctx) => write(ctx, (op) => session.remember({ text: args?.text, operationId: op })),
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
      execute: (args: { id: string; text: string }, ctx) => write(ctx, (op) => session.revise({ id: args?.id, text: args?.text, operationId: op })),
    },
    memory_retract: {
      description: 'Retract a fact in long-term memory, by its id: it is kept in the history but no longer recalled.',
      parameters: strict({ id: { type: 'string', minLength: 1 } }, ['id']),
      replay: 'idempotent',
      execute: (args: { id: string }, ctx) => write(ctx, (op) => session.retract({ id: args?.id, operationId: op })),
    },
  };
}
