/**
 * The extraction of a completed V3 run into its memory session, as the
 * versioned memory-intent chart runs it: the claim (the request's cited
 * message ids and digest), saved `planned`; `session.extract(request)`, which
 * prepares and commits the plan with its receipt in one call; the
 * acknowledgment, saved with the receipt's digest, count and revision. The
 * same steps settle a stored intent in a reconciliation, from its saved claim.
 */
import { MemoryError } from '../memory/errors.js';
import type { MemoryExtractionRequest } from '../memory/versioned/types.js';
import type { ModelMessage } from '../models/types.js';
import type { AgentRunEnvelopeV3, AgentRunMemoryIntent } from './envelope.js';
import type { CheckedVersionedMemory } from './versioned-options.js';
import { extractionRequest, requestOfClaim } from './versioned-request.js';
import { runExtractIntent } from './versioned-intents.js';
import { messageIdsOf } from '../chat/projection.js';
import type { ChatRecord } from '../chat/types.js';

/** What a V3 record's binding keeps of its versioned memory: the session's scope and how many messages were the run's input. */
export interface VersionedBinding {
  scope: string;
  inputCount?: number;
  /** `extract.maxTurns` of the run, so a reconciliation claims what the run would have. */
  maxTurns?: number;
}

export interface ExtractInput {
  memory: Pick<CheckedVersionedMemory, 'session' | 'extract'>;
  runId: string;
  /** The run's record (its transcript is what the extraction reads). */
  record: AgentRunEnvelopeV3;
  /** The stored intent to settle; null for the fresh one the terminal commit saved. */
  stored: AgentRunMemoryIntent | null;
  binding: VersionedBinding | undefined;
  /** The chat projection's ids of the transcript (messageIdsOf), when the run has a chat. */
  chatIds?: () => Promise<readonly string[] | null>;
  /** Saves the record with this entry as the intent (throws when the run store does). */
  save(entry: AgentRunMemoryIntent): Promise<void>;
}

function transcriptOf(record: AgentRunEnvelopeV3): ModelMessage[] {
  const context = (record.snapshot as unknown as { context?: { messages?: ModelMessage[] } }).context;
  return context?.messages ?? ((record.result as { messages?: ModelMessage[] } | undefined)?.messages ?? []);
}

function inputCountOf(record: AgentRunEnvelopeV3, transcript: readonly ModelMessage[], binding: VersionedBinding | undefined): number {
  if (binding?.inputCount !== undefined) return binding.inputCount;
  const chat = (record.snapshot as unknown as { context?: { chat?: { inputCount?: number } | null } }).context?.chat;
  if (typeof chat?.inputCount === 'number') return chat.inputCount;
  const first = transcript.findIndex((m) => m.role === 'assistant');
  return first < 0 ? transcript.length : first;
}

/** The chat projection's ids of a record's transcript: a stored chat's own id for an input message the run continued. */
export async function chatIdsOf(
  chat: { store: { loadChat(chatId: string): Promise<unknown> }; chatId: string }, runId: string, record: AgentRunEnvelopeV3,
): Promise<readonly string[] | null> {
  try {
    const stored = (await chat.store.loadChat(chat.chatId)) as ChatRecord | undefined;
    return messageIdsOf(runId, transcriptOf(record), stored ?? undefined);
  } catch {
    // A chat store that cannot be read: the run's own ids (`<runId>:<index>`) are cited.
    return null;
  }
}

const extractOptionsOf = (binding: VersionedBinding | undefined) => (binding?.maxTurns !== undefined ? { maxTurns: binding.maxTurns } : {});

/** Runs the extraction's chart to its end. Resolves with the last entry; every durable step went through `save`. */
export function extractIntent(input: ExtractInput): Promise<AgentRunMemoryIntent> {
  const session = input.memory.session;
  const operationId = session.operationId({ kind: 'extract', runId: input.runId });
  const transcript = transcriptOf(input.record);
  const inputCount = inputCountOf(input.record, transcript, input.binding);
  let claimed: MemoryExtractionRequest | null = null;
  return runExtractIntent(operationId, input.stored, {
    async claim() {
      const ids = input.chatIds ? await input.chatIds() : null;
      claimed = extractionRequest({ runId: input.runId, operationId, transcript, inputCount, options: input.memory.extract ?? extractOptionsOf(input.binding) }, ids);
      return { messageIds: claimed.messages.map((m) => m.id), requestDigest: session.requestDigest(claimed) };
    },
    save: (entry) => input.save(entry),
    async commit({ messageIds, requestDigest }) {
      const request = claimed ?? requestOfClaim({ runId: input.runId, operationId, transcript, inputCount }, messageIds);
      if (!request || session.requestDigest(request) !== requestDigest) {
        throw new MemoryError('memory_receipt_mismatch',
          `The extraction request of run ${input.runId} built from its record is not the one its intent ${operationId} claimed (${requestDigest}); nothing was committed.`);
      }
      const result = await session.extract(request);
      return { receipt: result.receipt, replayed: result.replayed };
    },
    readReceipt: async () => (await session.receipt(operationId)) ?? null,
  });
}
