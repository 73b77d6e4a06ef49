/**
 * What the delegation crash properties (handoff-crash, sub-agent-crash)
 * share: scripted models that look at which tools have answered, a tally of
 * plain effects, the careful operator that settles an interrupted call from
 * that tally, and stores closed after each test.
 */
import { afterEach } from 'vitest';
import type { AgentResult, ResumeOptions } from 'cairn/agent';
import type { CrashPoint } from 'cairn/testing';

/** The part of a model request the scripted models read. */
export type Request = { messages: readonly { role: string; toolName?: string }[] };

/** True when `tool` has answered in this request's conversation. */
export const answered = (request: Request, tool: string): boolean =>
  request.messages.some((m) => m.role === 'tool' && m.toolName === tool);

/** The parameters of a tool that takes no arguments. */
export const NO_ARGS = { type: 'object', properties: {}, additionalProperties: false };

/** How many times each tool's effect ran, by tool name, over every leg of one drive. */
export type Effects = Record<string, number>;

/** Counts one run of `tool`'s effect. */
export function countEffect(effects: Effects, tool: string): void {
  effects[tool] = (effects[tool] ?? 0) + 1;
}

/**
 * A careful operator: for a run stopped at tool-reconciliation-required,
 * reports an interrupted plain call as done when its effect is in `effects`
 * and asks for it to be retried otherwise, never by guessing.
 */
export function operatorAnswers(effects: Effects, result: AgentResult<unknown>): Partial<ResumeOptions> {
  if (result.status !== 'stopped' || result.reason !== 'tool-reconciliation-required') return {};
  const reconciledToolResults = [];
  const retryToolCallIds = [];
  for (const effect of result.unknownEffects ?? []) {
    if ((effects[effect.toolName] ?? 0) > 0) reconciledToolResults.push({ toolCallId: effect.toolCallId, output: 'done' });
    else retryToolCallIds.push(effect.toolCallId);
  }
  return { reconciledToolResults, retryToolCallIds };
}

/** A crash point as an assertion message: `save 3 after`, `tool 2 before (charge)`. */
export function crashWhere(at: CrashPoint): string {
  return `${at.kind} ${at.index} ${at.when}${at.toolName ? ` (${at.toolName})` : ''}`;
}

/** Returns `closeLater(close)`: each close it is given runs after the current test. */
export function closeAfterEach(): (close: () => void) => void {
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const close of closers.splice(0)) close();
  });
  return (close) => {
    closers.push(close);
  };
}
