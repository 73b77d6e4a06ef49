/**
 * The versioned memory session: one scope of one versioned store, with the
 * calls a person, a tool and a run's extraction make. Every write is one
 * commit under an operation id with the digest of what was asked, so a write
 * repeated under its operation id answers the stored receipt and applies
 * nothing; a forget goes to the store first, then to `onForget`.
 * See docs/versioned-memory.md.
 */
import { randomUUID } from 'node:crypto';
import { InvalidOptionsError } from '../../errors/index.js';
import { MemoryError } from '../errors.js';
import { checkMemoryScope, memoryScopeMatches } from '../scope.js';
import { sessionContextSource } from './context-source.js';
import { checkExtractionRequest, checkOperationId, checkSources, checkText, extractionDigest, writeDigest, type MemoryWriteRequest } from './digest.js';
import { EXTRACTION_PROMPT, labelled, parseAnswer, planOf } from './session-extract.js';
import { sessionTools } from './session-tools.js';
import type {
  MemoryScope, MemorySession, MemorySessionOptions, MemorySourceResolution, VersionedMemoryCommitResult,
  VersionedMemoryForgetEvent, VersionedMemoryMutation, VersionedMemorySource, VersionedMemoryStore,
} from './types.js';

const STORE_METHODS = ['commit', 'receipt', 'get', 'history', 'list', 'search', 'scopeRevision', 'forget', 'forgotten'] as const;

/**
 * The error a session's `forget` throws when the store forgot the record and
 * the `onForget` listener then threw: a MemoryError
 * `memory_forget_listener_failed` whose `event` is what the store forgot (ids
 * and revisions) and whose `cause` is the listener's error. The forget is
 * done; call the listener again with `event`.
 */
export class MemoryForgetListenerError extends MemoryError {
  constructor(readonly event: VersionedMemoryForgetEvent, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super('memory_forget_listener_failed',
      `Record ${JSON.stringify(event.records[0]?.recordId ?? '')} was forgotten in the memory store (${event.records.length} revision(s)), `
      + `but onForget threw: ${why}. The forget stays done; call the listener again with error.event.`);
    Object.defineProperty(this, 'cause', { value: cause, enumerable: false, writable: true, configurable: true });
  }
}

function checkStore(store: unknown): VersionedMemoryStore {
  const s = store as Record<string, unknown> | null;
  const missing = s !== null && typeof s === 'object' ? STORE_METHODS.filter((m) => typeof s[m] !== 'function') : [...STORE_METHODS];
  if (missing.length > 0) {
    throw new InvalidOptionsError(`createMemorySession: store must be a versioned memory store (missing ${missing.join(', ')}); see createInMemoryVersionedMemoryStore.`);
  }
  return store as VersionedMemoryStore;
}

function checkFunction<T>(value: T, name: string): T {
  if (value !== undefined && typeof value !== 'function') throw new InvalidOptionsError(`createMemorySession: ${name} must be a function.`);
  return value;
}

interface ChatLike {
  loadChat(chatId: string): Promise<{ messages: unknown[]; messageIds: string[]; scope: MemoryScope } | undefined>;
}

/** `<runId>:<index>`: the id a run gives its own message. */
export function parseRunMessageId(messageId: string): { runId: string; index: number } | undefined {
  const at = messageId.lastIndexOf(':');
  const digits = messageId.slice(at + 1);
  if (at <= 0 || !/^(0|[1-9][0-9]{0,8})$/.test(digits)) return undefined;
  return { runId: messageId.slice(0, at), index: Number(digits) };
}

/**
 * A memory session over `store` and `scope`. Checks its options first
 * (InvalidOptionsError, `memory_scope_invalid` for the scope).
 *
 * @example
 * const memory = createMemorySession({ store: createInMemoryVersionedMemoryStore(), scope: { userId: 'ada' } });
 * await memory.remember({ text: 'Ada prefers tea.' });
 * const [hit] = await memory.recall({ text: 'tea' });
 */
export function createMemorySession(options: MemorySessionOptions): MemorySession {
  if (options === null || typeof options !== 'object') throw new InvalidOptionsError('createMemorySession takes { store, scope, llm?, onForget?, chats?, generateId?, clock? }.');
  const store = checkStore(options.store);
  const scope = checkMemoryScope(options.scope, 'createMemorySession');
  const llm = checkFunction(options.llm, 'llm');
  const onForget = checkFunction(options.onForget, 'onForget');
  const generateId = checkFunction(options.generateId, 'generateId') ?? (() => randomUUID());
  if (options.clock !== undefined && (options.clock === null || typeof options.clock.now !== 'function')) {
    throw new InvalidOptionsError('createMemorySession: clock must be { now(): number }.');
  }
  const now = options.clock ? () => options.clock!.now() : () => Date.now();
  const chats = options.chats as ChatLike | undefined;
  if (chats !== undefined && (chats === null || typeof chats !== 'object' || typeof chats.loadChat !== 'function')) {
    throw new InvalidOptionsError('createMemorySession: chats must be a chat store (cairn/chat) with loadChat.');
  }

  const commit = (operationId: string, request: MemoryWriteRequest, mutations: VersionedMemoryMutation[]) =>
    store.commit({ scope, operationId, requestDigest: writeDigest(request), mutations, at: now() });
  const newOperationId = (op: string) => `${op}:${randomUUID()}`;

  const session: MemorySession = {
    store,
    scope: { ...scope },

    operationId(of) {
      const o = of as { kind?: unknown; runId?: unknown; modelStep?: unknown; toolCallId?: unknown } | null;
      if (o === null || typeof o !== 'object') throw new InvalidOptionsError('operationId takes { runId, kind }.');
      const runId = checkText(o.runId, 'operationId: runId');
      if (o.kind === 'extract') return `${runId}:memory:extract`;
      if (o.kind !== 'tool') throw new InvalidOptionsError("operationId: kind must be 'extract' or 'tool'.");
      if (typeof o.modelStep !== 'number' || !Number.isInteger(o.modelStep) || o.modelStep < 0) {
        throw new InvalidOptionsError('operationId: modelStep must be a whole number, 0 or more.');
      }
      return `${runId}:memory:${o.modelStep}:${checkText(o.toolCallId, 'operationId: toolCallId')}`;
    },

    recall(input) {
      const text = checkText(input?.text, 'recall: text');
      return store.search({ scope, text, ...(input.limit !== undefined ? { limit: input.limit } : {}) });
    },

    remember(input) {
      const text = checkText(input?.text, 'remember: text');
      const sources = checkSources(input.sources, 'remember: sources');
      const operationId = checkOperationId(input.operationId, 'remember: operationId') ?? newOperationId('remember');
      return commit(operationId, { op: 'remember', text, sources }, [
        { op: 'add', id: generateId(), text, origin: 'explicit', ...(sources.length > 0 ? { sources } : {}) },
      ]);
    },

    revise(input) {
      const id = checkText(input?.id, 'revise: id');
      const text = checkText(input.text, 'revise: text');
      const operationId = checkOperationId(input.operationId, 'revise: operationId') ?? newOperationId('revise');
      return commit(operationId, { op: 'revise', id, text }, [{ op: 'revise', id, text }]);
    },

    retract(input) {
      const id = checkText(input?.id, 'retract: id');
      const operationId = checkOperationId(input.operationId, 'retract: operationId') ?? newOperationId('retract');
      return commit(operationId, { op: 'retract', id }, [{ op: 'retract', id }]);
    },

    async forget(input) {
      const id = checkText(input?.id, 'forget: id');
      const revision = input.revision;
      if (revision !== undefined && (typeof revision !== 'number' || !Number.isInteger(revision) || revision < 1)) {
        throw new InvalidOptionsError('forget: revision must be a whole number, 1 or more.');
      }
      const event = await store.forget({ scope, id, ...(revision !== undefined ? { revision } : {}), at: now() });
      const copy = (): VersionedMemoryForgetEvent => ({
        scope: { ...event.scope }, records: event.records.map((r) => ({ recordId: r.recordId, revision: r.revision })), forgottenAt: event.forgottenAt,
      });
      if (onForget) {
        try {
          await onForget(copy());
        } catch (error) {
          throw new MemoryForgetListenerError(copy(), error);
        }
      }
      return copy();
    },

    async resolveSource(source: VersionedMemorySource, resolve?: { chatId?: string }): Promise<MemorySourceResolution> {
      const messageId = checkText(source?.messageId, 'resolveSource: messageId');
      const chatId = resolve?.chatId === undefined ? scope.chatId : checkText(resolve.chatId, 'resolveSource: chatId');
      const parsed = parseRunMessageId(messageId);
      if (chats && chatId !== undefined) {
        const chat = await chats.loadChat(chatId);
        // A chat of another user, agent or chat is not this session's: it answers missing, as an absent one does.
        const index = chat && memoryScopeMatches(scope, chat.scope ?? {}) ? chat.messageIds.indexOf(messageId) : -1;
        if (!chat || index === -1 || chat.messages[index] === undefined) return { status: 'missing', messageId };
        return {
          status: 'found', messageId, chatId, index, message: JSON.parse(JSON.stringify(chat.messages[index])) as unknown,
          ...(parsed ? { runId: parsed.runId } : {}),
        };
      }
      return parsed ? { status: 'found', messageId, runId: parsed.runId, index: parsed.index } : { status: 'missing', messageId };
    },

    requestDigest: (request) => extractionDigest(request),

    async extract(request, extractOptions): Promise<VersionedMemoryCommitResult> {
      const checked = checkExtractionRequest(request);
      const requestDigest = extractionDigest(checked);
      const stored = await store.receipt({ scope, operationId: checked.operationId });
      if (stored) {
        if (stored.requestDigest !== requestDigest) {
          throw new MemoryError('memory_receipt_mismatch', `extract: operation ${JSON.stringify(checked.operationId)} committed a request of another digest (${stored.requestDigest}, this one is ${requestDigest}).`);
        }
        return { receipt: stored, replayed: true };
      }
      if (!llm) throw new InvalidOptionsError('extract needs the session\'s llm (createMemorySession({ llm })).');
      const signal = extractOptions?.signal;
      const answer = await llm({ prompt: EXTRACTION_PROMPT, messages: labelled(checked.messages), ...(signal ? { signal } : {}) });
      const parsed = parseAnswer(answer);
      const active = await store.list({ scope });
      const mutations = planOf(parsed, checked.messages, active, generateId);
      return store.commit({ scope, operationId: checked.operationId, requestDigest, mutations, at: now() });
    },

    receipt(operationId) {
      return store.receipt({ scope, operationId: checkText(operationId, 'receipt: operationId') });
    },

    tools(run) {
      if (run?.onReceipt !== undefined && typeof run.onReceipt !== 'function') throw new InvalidOptionsError('tools: onReceipt must be a function.');
      return sessionTools(session, checkText(run?.runId, 'tools: runId'), run?.onReceipt);
    },

    contextSource(sourceOptions) {
      return sessionContextSource((input) => store.search({ scope, text: input.text, limit: input.limit }), sourceOptions);
    },
  };
  return session;
}
