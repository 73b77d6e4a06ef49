/**
 * The digest of a history, cheap to take at every step: each message is
 * hashed once (its canonical JSON), keyed by the message object, and the
 * history's digest is sha256 of its messages' hashes in order. The engine's
 * transcript only grows and shares its message objects from step to step, so
 * a step hashes what it added, not the whole history again. A history read
 * back from a record (new objects) hashes each message once more, to the same
 * digest.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../agent/json.js';
import type { ModelMessage } from '../models/types.js';
import { messageText } from './render.js';

const hashes = new WeakMap<object, string>();
const texts = new WeakMap<object, string>();

function messageHash(message: ModelMessage): string {
  let hash = hashes.get(message);
  if (hash === undefined) {
    hash = createHash('sha256').update(canonicalJson(message)).digest('hex');
    hashes.set(message, hash);
  }
  return hash;
}

/** `sha256:` of the history's message hashes, in order. */
export function historyDigest(messages: readonly ModelMessage[]): string {
  const h = createHash('sha256');
  for (const message of messages) h.update(messageHash(message));
  return `sha256:${h.digest('hex')}`;
}

/** A message's text as the estimator counts it, made once per message object. */
export function cachedMessageText(message: ModelMessage): string {
  let text = texts.get(message);
  if (text === undefined) {
    text = messageText(message);
    texts.set(message, text);
  }
  return text;
}
