/**
 * What the session service conformance cases share: the fixture a backend
 * hands each case, and the keys, turns and checks the cases are written with.
 */
import assert from 'node:assert/strict';
import type { SessionKey, SessionService, SessionTurnInput } from '../sessions/types.js';

/** What `create()` hands one session case. */
export interface SessionServiceFixture {
  /** A service holding no sessions. Every case gets its own (a fresh directory, file or schema). */
  service: SessionService;
  /**
   * Another service object over the same sessions, as a second process opens
   * it. When given, the durability case reads through it and the race cases
   * write through several at once; close them in `destroy`.
   */
  reopen?(): Promise<SessionService>;
  /**
   * Damages the stored session `sessionId` the way a torn write or an editor
   * would (a truncated file, a row that does not parse). When given, the
   * corruption cases check that every call refuses it and nothing resets it.
   */
  corrupt?(sessionId: string): Promise<void>;
}

export interface SessionServiceInitializer {
  /** Names the describe block: `SessionService conformance: <name>`. */
  name: string;
  /** Makes the service for one case. Called once per case. */
  create(): Promise<SessionServiceFixture>;
  /** Closes what `create` and `reopen` opened. Called after each case, passed or failed. */
  destroy?(fixture: SessionServiceFixture): Promise<void>;
}

export type SessionRegister = (name: string, body: (fixture: SessionServiceFixture) => Promise<void>) => void;

export const ADA: SessionKey = { appName: 'support-copilot', userId: 'user_ada', sessionId: 'demo' };

export function key(sessionId: string, over: Partial<SessionKey> = {}): SessionKey {
  return { ...ADA, sessionId, ...over };
}

/** A turn: the user's prompt and the answer, with text that must come back byte for byte. */
export function turn(turnId: string, text = `question ${turnId}`): SessionTurnInput {
  return {
    turnId,
    runId: `run-${turnId}`,
    messages: [
      { role: 'user', content: text },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ toolCallId: `call-${turnId}`, toolName: 'lookupAccount', args: { accountId: 'acct_123' } }],
      },
      { role: 'tool', toolCallId: `call-${turnId}`, toolName: 'lookupAccount', content: { status: 'active', balance: 12.5, flags: [true, null] } },
      { role: 'assistant', content: `Answer to ${turnId}: active. \u{1F4E6} \u00e9\u00a0` },
    ],
    metadata: { channel: 'web' },
  };
}

/** Session ids a service must refuse before touching anything: separators, dot segments, NUL, and the rest. */
export const BAD_SESSION_IDS: readonly unknown[] = [
  '', '..', '.', '../escape', 'a/b', 'a\\b', '/etc/passwd', '..\\..\\x', '.hidden', 'a\0b', 'x'.repeat(129),
  'space here', 'colon:x', 'new\nline', '%2e%2e', 'caf\u00e9', 42, null, undefined, {},
];

/** Expects the promise to reject with a Cairn error of `code` and `name`, and returns the error. */
export async function refusedWith(promise: Promise<unknown>, name: string, code: string): Promise<Error & { code: string }> {
  try {
    await promise;
  } catch (error) {
    const e = error as Error & { code: string };
    assert.equal(e.name, name, `expected ${name}, got ${e.name}: ${e.message}`);
    assert.equal(e.code, code);
    return e;
  }
  assert.fail(`expected the call to reject with ${name}`);
}

/** A thenable-free call: a synchronous throw becomes a rejection, as a service may do either. */
export function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (error) {
    return Promise.reject(error);
  }
}
