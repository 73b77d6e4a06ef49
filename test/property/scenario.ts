/**
 * Random scenarios for the crash property: a script of model turns, the tools
 * it calls, and a model whose answer is a function of the conversation, so a
 * run resumed anywhere meets the same script.
 *
 * A scenario is 1-4 turns, each a text turn or a batch of 1-3 parallel tool
 * calls, then a final text turn. A text turn ends the run it is in (the engine
 * completes a run on a turn without tool calls), so the conversation goes on
 * in a new run, one per "leg", with the previous leg's messages and a new user
 * message: the turn after a text turn answers a new user turn.
 */
import fc from 'fast-check';
import type { AgentTool, AgentTools, JsonValue, Message } from 'cairn/agent';
import { ledgerTool, type Ledger, type MockTurn } from 'cairn/testing';
import type { ModelRequest } from '../../src/models/types.js';

/** The five kinds of tool: each is also the tool's name. */
export const TOOL_KINDS = ['plain', 'idem', 'gated', 'client', 'failing'] as const;
export type ToolKind = (typeof TOOL_KINDS)[number];

/** Tools whose effect must never run twice (not `replay: 'idempotent'`, and with an `execute`). */
export const PLAIN_KINDS: readonly ToolKind[] = ['plain', 'gated', 'failing'];

export interface ScriptCall {
  kind: ToolKind;
  /** Unique within its turn; the same ids come back in later turns. */
  toolCallId: string;
}

export type ScriptTurn = { type: 'text' } | { type: 'tools'; calls: ScriptCall[] };

export interface Scenario {
  /** Every model turn in order; the last one is always text. */
  turns: ScriptTurn[];
  /** The legs run under an execution context with a budget (its ledger is checked after every leg). */
  budget?: boolean;
}

const CALL_IDS = ['c1', 'c2', 'c3', 'c4'];

const batchArb: fc.Arbitrary<ScriptTurn> = fc
  .array(fc.constantFrom(...TOOL_KINDS), { minLength: 1, maxLength: 3 })
  .chain((kinds) =>
    fc.shuffledSubarray(CALL_IDS, { minLength: kinds.length, maxLength: kinds.length })
      .map((ids): ScriptTurn => ({ type: 'tools', calls: kinds.map((kind, i) => ({ kind, toolCallId: ids[i]! })) })));

const turnArb: fc.Arbitrary<ScriptTurn> = fc.oneof(
  { weight: 1, arbitrary: fc.constant<ScriptTurn>({ type: 'text' }) },
  { weight: 3, arbitrary: batchArb },
);

export const scenarioArb: fc.Arbitrary<Scenario> = fc
  .tuple(fc.array(turnArb, { minLength: 1, maxLength: 4 }), fc.boolean())
  .map(([turns, budget]) => ({ turns: [...turns, { type: 'text' as const }], ...(budget ? { budget } : {}) }));

/** How many runs (legs) the scenario takes: one per text turn. */
export const legCount = (scenario: Scenario) => scenario.turns.filter((t) => t.type === 'text').length;

export function describeScenario(scenario: Scenario): string {
  return scenario.turns
    .map((t) => (t.type === 'text' ? 'text' : `[${t.calls.map((c) => `${c.kind}:${c.toolCallId}`).join(' ')}]`))
    .join(' → ') + (scenario.budget ? ' (budget)' : '');
}

/** What each tool returns: independent of modelStep, which a retried model call shifts. */
export const toolOutput = (kind: ToolKind, toolCallId: string) => `${kind} done for ${toolCallId}`;
/** The message of the error the failing tool throws (after its effect). */
export const FAILING_MESSAGE = 'failing failed (injected)';
/** What the operator answers every client call with. */
export const CLIENT_OUTPUT: JsonValue = { answer: 'from the client' };

/**
 * The tools of one leg, writing to that leg's ledger (a new run starts its
 * model steps at 0 again, so each leg keeps its own ledger).
 */
export function makeTools(ledger: Ledger): AgentTools {
  const result = (kind: ToolKind) => (_args: unknown, ctx: { toolCallId: string }) => toolOutput(kind, ctx.toolCallId);
  const client: AgentTool = {
    description: 'Answered by the client.',
    parameters: { type: 'object', properties: {}, additionalProperties: true },
  };
  return {
    plain: ledgerTool(ledger, 'plain', { result: result('plain') }),
    idem: ledgerTool(ledger, 'idem', { idempotent: true, result: result('idem') }),
    gated: ledgerTool(ledger, 'gated', { needsApproval: true, result: result('gated') }),
    client,
    failing: ledgerTool(ledger, 'failing', { fail: true }),
  };
}

/** A one-shot transient model failure: the Nth model call of the whole drive answers 503. */
export interface TransientFault {
  at: number;
  calls: number;
  fired: boolean;
}

/**
 * The scripted model's answer: the turn whose index is the number of assistant
 * turns the conversation already holds. A model call lost to a crash or a 503
 * adds no turn, so the retry gets the same answer.
 */
export function scriptedTurn(scenario: Scenario, request: ModelRequest, transient?: TransientFault): MockTurn {
  if (transient && !transient.fired && ++transient.calls === transient.at) {
    transient.fired = true;
    return { error: { status: 503, message: 'service unavailable (injected)' } };
  }
  const messages = request.messages as Message[];
  const index = messages.filter((m) => m.role === 'assistant').length;
  const turn = scenario.turns[index];
  if (!turn) return { text: `Unexpected turn ${index}.` };
  if (turn.type === 'text') return { text: `Answer ${index}.` };
  return {
    toolCalls: turn.calls.map((call, i) => ({ toolName: call.kind, toolCallId: call.toolCallId, args: { turn: index, i } })),
  };
}
