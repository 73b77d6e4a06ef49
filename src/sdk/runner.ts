/**
 * `createRunner({ appName, agent, sessionService })`: an Agent in a
 * user-facing, multi-turn product. Each `runner.run({ userId, sessionId?,
 * prompt })` reads the session's conversation, runs the agent on it plus the
 * new prompt, and appends the turn (the prompt and what the run added) with
 * one revisioned write, so the next turn's model request holds this one.
 *
 * A turn that stops for an approval is not appended yet: continue it with
 * `runner.run({ userId, sessionId, state, approvalResponses })`, and the turn
 * is appended once its run has ended. The turn id is the run id, so a write
 * repeated after an unclear failure never stores a turn twice.
 */
import { nanoid } from 'nanoid';
import { InvalidOptionsError } from '../errors/index.js';
import type { AgentRunStore, ApprovalResponse, Message } from '../agent/types.js';
import { appendSessionTurn } from '../sessions/append.js';
import type { Session, SessionKey, SessionService } from '../sessions/types.js';
import type { Agent, AgentRunResult } from './agent.js';
import type { AgentState } from './state.js';

export interface RunnerOptions<T = string> {
  /** Names the product; sessions are kept per app and user. */
  appName: string;
  agent: Agent<T>;
  sessionService: SessionService;
  /** Where each turn's run is checkpointed. @default a private in-memory store per turn */
  store?: AgentRunStore;
}

export interface RunnerRunInput {
  userId: string;
  /** The session to continue or create. @default a new id */
  sessionId?: string;
  /** The user's message for this turn. */
  prompt?: string;
  /** A turn's state that stopped for an approval, to continue it. */
  state?: AgentState;
  approvalResponses?: ApprovalResponse[];
  abortSignal?: AbortSignal;
}

/** Which session a turn went to, and where it stands after the turn. */
export interface RunnerSessionInfo {
  appName: string;
  userId: string;
  sessionId: string;
  /** The session's revision after this turn (the one it was read at when the turn was not appended). */
  revision: number;
  /** How many turns the session holds. */
  turns: number;
  /** Whether this call appended its turn (false while the run waits for an approval). */
  appended: boolean;
}

export interface RunnerRunResult<T = string> extends AgentRunResult<T> {
  session: RunnerSessionInfo;
}

export interface Runner<T = string> {
  readonly appName: string;
  readonly agent: Agent<T>;
  readonly sessionService: SessionService;
  run(input: RunnerRunInput): Promise<RunnerRunResult<T>>;
}

const isEnded = (status: string) => status === 'completed' || status === 'failed' || status === 'stopped';

/**
 * Creates a runner.
 *
 * @example
 * ```ts
 * const runner = createRunner({ appName: 'support', agent, sessionService: createFileSessionService({ directory: '.cairn/sessions' }) });
 * const first = await runner.run({ userId: 'u1', prompt: 'Hi' });
 * await runner.run({ userId: 'u1', sessionId: first.session.sessionId, prompt: 'And then?' });
 * ```
 */
export function createRunner<T = string>(options: RunnerOptions<T>): Runner<T> {
  if (options === null || typeof options !== 'object') throw new InvalidOptionsError('createRunner() takes { appName, agent, sessionService }.');
  const { appName, agent, sessionService, store } = options;
  if (typeof appName !== 'string' || appName === '') throw new InvalidOptionsError('createRunner(): appName must be a non-empty string.');
  if (!agent || typeof agent.run !== 'function') throw new InvalidOptionsError('createRunner(): agent must be an Agent.');
  if (!sessionService || typeof sessionService.getSession !== 'function' || typeof sessionService.appendTurn !== 'function') {
    throw new InvalidOptionsError('createRunner(): sessionService must implement the SessionService contract (getSession, appendTurn, ...).');
  }
  return {
    appName, agent, sessionService,
    async run(input) {
      if (input === null || typeof input !== 'object') throw new InvalidOptionsError('runner.run() takes { userId, sessionId?, prompt }.');
      if (input.prompt === undefined && input.state === undefined) throw new InvalidOptionsError('runner.run(): a turn needs a prompt (or the state of a turn to continue).');
      const key: SessionKey = { appName, userId: input.userId, sessionId: input.sessionId ?? nanoid() };
      // Read first: a foreign, corrupt or badly named session is refused before anything runs.
      const before: Session | undefined = await sessionService.getSession(key);
      const history = before?.messages ?? [];
      const base = { ...(store ? { store } : {}), ...(input.abortSignal ? { abortSignal: input.abortSignal } : {}) };
      const result = input.state !== undefined && input.prompt === undefined
        ? await agent.run({ ...base, state: input.state, ...(input.approvalResponses ? { approvalResponses: input.approvalResponses } : {}) })
        : await agent.run({ ...base, messages: history as Message[], prompt: input.prompt! });
      const info = (session: Session | undefined, appended: boolean): RunnerSessionInfo => ({
        appName, userId: key.userId, sessionId: key.sessionId, revision: session?.revision ?? 0, turns: session?.turns.length ?? 0, appended,
      });
      if (!isEnded(result.status)) return { ...result, session: info(before, false) };
      // A continued turn started from the history its first leg read: its own messages follow that history.
      const own = result.state.messages.filter((m) => m.role !== 'system');
      const startedFrom = input.state !== undefined && input.prompt === undefined ? sharedPrefix(own, history) : history.length;
      const messages = own.slice(startedFrom);
      if (messages.length === 0) return { ...result, session: info(before, false) };
      const after = await appendSessionTurn(sessionService, key, {
        turnId: result.runId, runId: result.runId, messages,
      }, { expectedRevision: before?.revision ?? 0 });
      return { ...result, session: info(after, true) };
    },
  };
}

/**
 * How many of a continued run's messages came from the session: the longest
 * prefix they share with the session's conversation (which only grows, so the
 * history the turn's first leg read is a prefix of it still).
 */
function sharedPrefix(messages: readonly Message[], session: readonly Message[]): number {
  let n = 0;
  while (n < messages.length && n < session.length && JSON.stringify(messages[n]) === JSON.stringify(session[n])) n++;
  return n;
}
