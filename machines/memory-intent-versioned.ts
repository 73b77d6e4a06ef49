/**
 * The versioned memory-intent chart: one write of a V3 run into a versioned
 * memory session, through the protocol intent → plan → atomic commit with its
 * receipt → acknowledgment. Pure: the saves and the memory calls are named
 * actors that src/ provides (their names, inputs and outputs are listed at
 * the top of memory-intent-versioned-types.ts).
 *
 *   extract: intended (claim) → claiming (save: planned) → planned (commit)
 *            → committed → acknowledging (save: acknowledged) → acknowledged.
 *            A commit that throws saves why on the still-planned intent and
 *            rests in `stalled`; a receipt of another request digest saves
 *            `failed`; a save that throws ends in `unsaved` with no further save.
 *   settle:  a stored planned intent first reads its receipt back (`reading`):
 *            found, it is acknowledged without a second commit; missing, it
 *            commits again (the session replays or applies).
 *   tool:    no invokes; EXECUTED, COMPLETED and FAILED move it, each sent in
 *            the save of the tool call's receipt.
 *
 * Every invoked actor may run again when a snapshot is restored (XState
 * restarts an unsettled invoke), so each is safe to repeat: the claim is
 * deterministic, a commit under a committed operation id is replayed, a save
 * overwrites the entry.
 */
import { notProvided as notProvidedTo } from './not-provided.js';
import { and, assign, fromPromise, not, setup } from 'xstate';
import type {
  ClaimInput, ClaimOutput, CommitInput, CommitOutput, ReadReceiptInput, ReadReceiptOutput, SaveIntentInput,
  VersionedIntentCommitReceipt, VersionedIntentContext, VersionedIntentEntry, VersionedIntentError, VersionedIntentEvent,
  VersionedIntentInput, VersionedIntentOutput, VersionedIntentStatus,
} from './memory-intent-versioned-types.js';

/** Bumped whenever a stored snapshot of an older version would not restore as it is. */
export const VERSIONED_INTENT_MACHINE_VERSION = 1;

/**
 * Error codes of a commit that no retry can fix: the intent is saved `failed`.
 * Any other error (the memory LLM, a source it invented, the memory store)
 * leaves the intent `planned` with the error, for a reconciliation to settle.
 */
export const PERMANENT_INTENT_ERROR_CODES: readonly string[] = ['memory_receipt_mismatch'];

const MAX_MESSAGE = 1000;

const notProvided = notProvidedTo('versioned memory-intent');

/** An error as plain data: name, message (at most 1000 characters) and code when it has one. */
export function intentErrorOf(raw: unknown): VersionedIntentError {
  const e = (typeof raw === 'object' && raw !== null ? raw : {}) as { name?: unknown; message?: unknown; code?: unknown };
  const message = typeof e.message === 'string' ? e.message : String(raw);
  const error: VersionedIntentError = {
    name: typeof e.name === 'string' && e.name !== '' ? e.name : 'Error',
    message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message,
  };
  if (typeof e.code === 'string') error.code = e.code;
  return error;
}

const mismatchError = (intent: string | null, receipt: string): VersionedIntentError => ({
  name: 'MemoryError',
  code: 'memory_receipt_mismatch',
  message: `The receipt's request digest ${receipt} is not the intent's ${intent ?? '(none)'}.`,
});

/** The entry of a context at a status; null fields are left out. */
export function entryOf(context: VersionedIntentContext, status: VersionedIntentStatus): VersionedIntentEntry {
  const entry: VersionedIntentEntry = { operationId: context.operationId, kind: context.kind, status };
  if (context.messageIds !== null) entry.messageIds = [...context.messageIds];
  if (context.requestDigest !== null) entry.requestDigest = context.requestDigest;
  if (context.planned !== null) entry.planned = context.planned;
  if (context.receipt !== null) entry.receipt = { ...context.receipt };
  if (context.error !== null) entry.error = { ...context.error };
  return entry;
}

/** The status each state stands for; a saving state stands for the status it saves. */
const STATE_STATUS: Record<string, VersionedIntentStatus | 'durable'> = {
  'extract.intended': 'intended',
  'extract.claiming': 'planned',
  'extract.planned': 'planned',
  'extract.reading': 'planned',
  'extract.committed': 'committed',
  'extract.acknowledging': 'acknowledged',
  'extract.failing': 'failed',
  'extract.stalling': 'durable',
  'tool.intended': 'intended',
  'tool.committed': 'committed',
  acknowledged: 'acknowledged',
  failed: 'failed',
  stalled: 'durable',
  unsaved: 'durable',
  opening: 'durable',
};

const stateKey = (value: unknown): string => {
  if (typeof value === 'string') return value;
  const [parent, child] = Object.entries(value as Record<string, unknown>)[0] ?? [];
  return `${parent}.${String(child)}`;
};

/**
 * The intent entry a snapshot (live or persisted) stands for: the entry the
 * run stores, its status derived from the state. While a save runs it is the
 * entry being saved; in `stalled` and `unsaved` the status is the last one
 * saved.
 */
export function intentEntryOf(snapshot: { value: unknown; context: VersionedIntentContext }): VersionedIntentEntry {
  const status = STATE_STATUS[stateKey(snapshot.value)] ?? 'durable';
  return entryOf(snapshot.context, status === 'durable' ? snapshot.context.status : status);
}

type Receiptish = { output?: unknown; receipt?: unknown };
/** The receipt an event carries: a commit's output, a read receipt, or an EXECUTED event's. */
function receiptOf(event: unknown): VersionedIntentCommitReceipt | null {
  const e = event as Receiptish;
  if (e.output !== undefined && e.output !== null && typeof e.output === 'object' && 'receipt' in e.output) {
    return (e.output as CommitOutput).receipt;
  }
  if ('output' in e) return (e.output as ReadReceiptOutput) ?? null;
  return (e.receipt as VersionedIntentCommitReceipt | undefined) ?? null;
}

export const versionedIntentSetup = setup({
  types: {
    context: {} as VersionedIntentContext,
    input: {} as VersionedIntentInput,
    output: {} as VersionedIntentOutput,
    events: {} as VersionedIntentEvent,
  },
  actors: {
    claim: fromPromise<ClaimOutput, ClaimInput>(notProvided('claim')),
    saveIntent: fromPromise<unknown, SaveIntentInput>(notProvided('saveIntent')),
    commit: fromPromise<CommitOutput, CommitInput>(notProvided('commit')),
    readReceipt: fromPromise<ReadReceiptOutput, ReadReceiptInput>(notProvided('readReceipt')),
  },
  actions: {
    takeReceipt: assign(({ event }) => {
      const r = receiptOf(event)!;
      return {
        requestDigest: r.requestDigest, planned: r.planned,
        receipt: { scopeRevision: r.scopeRevision, committedAt: r.committedAt }, error: null,
      };
    }),
    refuseReceipt: assign(({ context, event }) => ({ error: mismatchError(context.requestDigest, receiptOf(event)!.requestDigest) })),
    failWith: assign(({ event }) => ({ error: intentErrorOf((event as { error?: unknown }).error) })),
    clearError: assign({ error: null }),
    saved: assign((_, params: { status: VersionedIntentStatus }) => ({ status: params.status })),
  },
  guards: {
    isTool: ({ context }) => context.kind === 'tool',
    statusIs: ({ context }, params: { status: VersionedIntentStatus }) => context.status === params.status,
    hasClaim: ({ context }) => context.messageIds !== null && context.requestDigest !== null,
    hasReceipt: ({ context }) => context.receipt !== null && context.planned !== null && context.requestDigest !== null,
    receiptMissing: ({ event }) => receiptOf(event) === null,
    // A tool intent learns its digest from its first receipt; an extraction's comes from its claim.
    receiptMatches: ({ context, event }) => context.requestDigest === null || receiptOf(event)?.requestDigest === context.requestDigest,
    permanent: ({ event }) => {
      const code = intentErrorOf((event as { error?: unknown }).error).code;
      return code !== undefined && PERMANENT_INTENT_ERROR_CODES.includes(code);
    },
  },
});

const save = (status: 'planned' | 'acknowledged' | 'failed' | 'durable') => ({
  src: 'saveIntent' as const,
  id: 'saveIntent',
  input: ({ context }: { context: VersionedIntentContext }) => ({
    operationId: context.operationId,
    entry: entryOf(context, status === 'durable' ? context.status : status),
  }),
});
const unsaved = { target: '#versionedIntent.unsaved', actions: 'failWith' } as const;
const statusIs = (status: VersionedIntentStatus) => ({ type: 'statusIs' as const, params: { status } });
const saved = (status: VersionedIntentStatus) => ({ type: 'saved' as const, params: { status } });

export const versionedIntentMachine = versionedIntentSetup.createMachine({
  id: 'versionedIntent',
  version: String(VERSIONED_INTENT_MACHINE_VERSION),
  context: ({ input }) => ({
    operationId: input.stored?.operationId ?? input.operationId,
    kind: input.stored?.kind ?? input.kind,
    status: input.stored?.status ?? 'intended',
    messageIds: input.stored?.messageIds ? [...input.stored.messageIds] : null,
    requestDigest: input.stored?.requestDigest ?? null,
    planned: input.stored?.planned ?? null,
    receipt: input.stored?.receipt ? { ...input.stored.receipt } : null,
    error: input.stored?.error ? { ...input.stored.error } : null,
  }),
  initial: 'opening',
  states: {
    // Where the stored status says the intent stands (a fresh one stands at `intended`).
    opening: {
      always: [
        { guard: statusIs('acknowledged'), target: 'acknowledged' },
        { guard: statusIs('failed'), target: 'failed' },
        { guard: and(['isTool', statusIs('committed')]), target: 'tool.committed' },
        { guard: 'isTool', target: 'tool.intended' },
        { guard: and([statusIs('committed'), 'hasReceipt']), target: 'extract.committed' },
        { guard: and([not(statusIs('intended')), 'hasClaim']), target: 'extract.reading' },
        { target: 'extract.intended' },
      ],
    },
    extract: {
      initial: 'intended',
      states: {
        // The run builds its extraction request: the cited message ids and the request's digest.
        intended: {
          invoke: {
            src: 'claim',
            id: 'claim',
            input: ({ context }) => ({ operationId: context.operationId }),
            onDone: {
              target: 'claiming',
              actions: assign(({ event }) => ({ messageIds: [...event.output.messageIds], requestDigest: event.output.requestDigest })),
            },
            onError: { target: 'stalling', actions: 'failWith' },
          },
        },
        // The claim becomes durable: planned, with the message ids and the digest, no plan.
        claiming: {
          invoke: { ...save('planned'), onDone: { target: 'planned', actions: saved('planned') }, onError: unsaved },
        },
        // The session prepares the plan and commits it with its receipt, in one call.
        planned: {
          invoke: {
            src: 'commit',
            id: 'commit',
            input: ({ context }) => ({ operationId: context.operationId, messageIds: context.messageIds ?? [], requestDigest: context.requestDigest ?? '' }),
            onDone: [
              { guard: 'receiptMatches', target: 'committed', actions: 'takeReceipt' },
              { target: 'failing', actions: 'refuseReceipt' },
            ],
            onError: [
              { guard: 'permanent', target: 'failing', actions: 'failWith' },
              { target: 'stalling', actions: 'failWith' },
            ],
          },
        },
        // Settling a planned intent: its receipt, read back by operation id, says whether it committed.
        reading: {
          invoke: {
            src: 'readReceipt',
            id: 'readReceipt',
            input: ({ context }) => ({ operationId: context.operationId, requestDigest: context.requestDigest ?? '' }),
            onDone: [
              { guard: 'receiptMissing', target: 'planned' },
              { guard: 'receiptMatches', target: 'committed', actions: 'takeReceipt' },
              { target: 'failing', actions: 'refuseReceipt' },
            ],
            onError: { target: 'stalling', actions: 'failWith' },
          },
        },
        // The memory holds the change and the intent its receipt; the acknowledgment is the next durable step.
        committed: { always: { target: 'acknowledging' } },
        acknowledging: {
          invoke: { ...save('acknowledged'), onDone: { target: '#versionedIntent.acknowledged', actions: saved('acknowledged') }, onError: unsaved },
        },
        failing: {
          invoke: { ...save('failed'), onDone: { target: '#versionedIntent.failed', actions: saved('failed') }, onError: unsaved },
        },
        // Why the intent did not settle is saved on it; its status stays for a reconciliation.
        stalling: {
          invoke: { ...save('durable'), onDone: { target: '#versionedIntent.stalled' }, onError: unsaved },
        },
      },
    },
    // A tool write: the run saves each step of the intent with the tool call's receipt.
    tool: {
      initial: 'intended',
      states: {
        intended: {
          on: {
            EXECUTED: [
              { guard: 'receiptMatches', target: 'committed', actions: ['takeReceipt', saved('committed')] },
              { target: '#versionedIntent.failed', actions: ['refuseReceipt', saved('failed')] },
            ],
            FAILED: { target: '#versionedIntent.failed', actions: ['failWith', saved('failed')] },
          },
        },
        committed: {
          on: {
            COMPLETED: { target: '#versionedIntent.acknowledged', actions: ['clearError', saved('acknowledged')] },
            FAILED: { target: '#versionedIntent.failed', actions: ['failWith', saved('failed')] },
          },
        },
      },
    },
    acknowledged: { type: 'final' },
    failed: { type: 'final' },
    // The intent keeps its status (intended or planned) with the error saved on it.
    stalled: { type: 'final' },
    // A save threw: nothing more is saved; the record keeps its last saved entry, the error here is the save's.
    unsaved: { type: 'final' },
  },
  output: ({ context }) => entryOf(context, context.status),
});
