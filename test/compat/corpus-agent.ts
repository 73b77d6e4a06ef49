/**
 * The one agent behind the compatibility corpus. The generator
 * (generate-corpus.ts) ran it once per machine version to write the stored
 * records in corpus/run-v<N>/; the test (corpus.test.ts) resumes those records
 * with the same definition, so a resume checks the same binding the record was
 * written under (bindingId, model key, tool schemas, limits).
 *
 * Changing anything that goes into the binding (a tool's name, description,
 * parameters, approval flag or replay mode, the model id, the limits) makes
 * every frozen record refuse to resume with `binding_changed`: add a tool or a
 * case only under a new bindingId and a new corpus folder, never by editing
 * this one in place.
 *
 * Every effect is counted in an {@link Effects} object the caller owns, by
 * tool and by call id, so a test can say "the approved payment ran exactly
 * once" in the process that resumed it.
 */
import type { AgentOptions, AgentTool, ResumeOptions } from 'cairn/agent';
import { createMockModel, type MockResponse } from 'cairn/testing';

/** The binding id of every record in the corpus. */
export const CORPUS_BINDING_ID = 'cairn-compat-corpus-1';
/** The model id of the scripted model; `mock:corpus-model` is the binding's model key. */
export const CORPUS_MODEL_ID = 'corpus-model';
export const CORPUS_SCOPE = 'tenant-corpus';
/** The fixed time the generator's clock reads (2026-01-01T00:00:00Z), so `createdAt`/`updatedAt` are stable. */
export const WRITTEN_AT = 1_767_225_600_000;

/** Effects that reached the "outside world", counted where no crash or resume can reset them. */
export interface Effects {
  /** Calls of each tool's effect, by tool name. */
  byTool: Record<'pay' | 'ship' | 'lookup', number>;
  /** `<tool>@<toolCallId>` for every effect, in the order they ran. */
  log: string[];
}

export function createEffects(): Effects {
  return { byTool: { pay: 0, ship: 0, lookup: 0 }, log: [] };
}

export interface CorpusAgentOptions {
  effects: Effects;
  /** The run's id; every case has its own. */
  runId: string;
  store: NonNullable<AgentOptions['session']>['store'];
  /** The script of this leg's model turns: a strict mock, so an unexpected model call fails the leg. */
  responses: MockResponse[];
  /** The clock this leg reads. @default a clock fixed at {@link WRITTEN_AT} */
  now?: number;
  /** Prefix of this leg's generated ids (approval tokens), so two legs never mint the same id. @default 'corpus' */
  idPrefix?: string;
  /**
   * Awaited by `ship` after its effect is recorded and before it returns: a
   * test holds the call open with it (the drained case waits there until the
   * drain request has reached the run).
   */
  holdShip?: () => Promise<void>;
}

const object = (properties: Record<string, unknown>, required: string[]) => ({
  type: 'object' as const,
  properties,
  required,
  additionalProperties: false,
});

/**
 * The agent's tools:
 * - `pay` needs approval and has an effect (a payment);
 * - `askUser` is a client tool: no `execute`, the caller answers it;
 * - `lookup` is a plain tool (a read, counted like the others, so a replayed step shows);
 * - `ship` has an effect that a crash can leave interrupted, or that
 *   {@link CorpusAgentOptions.holdShip} can hold open.
 */
export function corpusTools(options: Pick<CorpusAgentOptions, 'effects' | 'holdShip'>): Record<string, AgentTool> {
  const { effects, holdShip } = options;
  const record = (tool: keyof Effects['byTool'], toolCallId: string) => {
    effects.byTool[tool] += 1;
    effects.log.push(`${tool}@${toolCallId}`);
  };
  return {
    pay: {
      description: 'Charge an order. A person approves every payment.',
      parameters: object({ orderId: { type: 'string' }, amountCents: { type: 'integer' } }, ['orderId', 'amountCents']),
      needsApproval: true,
      execute: ({ orderId, amountCents }: { orderId: string; amountCents: number }, ctx) => {
        record('pay', ctx.toolCallId);
        return { paid: true, orderId, amountCents };
      },
    },
    askUser: {
      description: 'Ask the person at the keyboard a question; the client answers.',
      parameters: object({ question: { type: 'string' } }, ['question']),
    },
    lookup: {
      description: 'Look up an order.',
      parameters: object({ orderId: { type: 'string' } }, ['orderId']),
      execute: ({ orderId }: { orderId: string }, ctx) => {
        record('lookup', ctx.toolCallId);
        return { orderId, status: 'packed' };
      },
    },
    ship: {
      description: 'Hand an order to the carrier.',
      parameters: object({ orderId: { type: 'string' } }, ['orderId']),
      execute: async ({ orderId }: { orderId: string }, ctx) => {
        record('ship', ctx.toolCallId);
        await holdShip?.();
        return { shipped: true, orderId };
      },
    },
  };
}

/** The scripted model of one leg. Its id is part of the binding, so it is the same in every leg. */
export function corpusModel(responses: MockResponse[]) {
  return createMockModel({ modelId: CORPUS_MODEL_ID, responses, generateToolCallId: (step, i) => `call_${step}_${i}` });
}

/**
 * The options of one leg (a start or a resume) of a corpus run. Resume-only
 * fields (verdicts, client results, retries) are spread over the result.
 */
export function corpusAgent(options: CorpusAgentOptions): ResumeOptions & { model: ReturnType<typeof corpusModel> } {
  const now = options.now ?? WRITTEN_AT;
  const prefix = options.idPrefix ?? 'corpus';
  let ids = 0;
  return {
    model: corpusModel(options.responses),
    prompt: 'Take care of order 7: look it up, ask the customer if needed, charge it and ship it.',
    system: 'You are the order desk. Use the tools; never guess a result.',
    bindingId: CORPUS_BINDING_ID,
    tools: corpusTools(options),
    maxSteps: 8,
    // A failed model call fails the run at once (no hidden retries), so the transient case is one scripted 503.
    maxRetries: 0,
    session: { store: options.store, runId: options.runId, scope: CORPUS_SCOPE },
    deps: {
      clock: { now: () => now },
      generateId: () => `${prefix}-id-${++ids}`,
    },
  };
}
