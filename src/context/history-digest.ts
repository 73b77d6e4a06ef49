/**
 * The digest of a history, cheap to take at every step: each message is
 * hashed once (its canonical JSON), keyed by the message object, and the
 * history's digest is sha256 of its messages' hashes in order. The engine's
 * transcript only grows and shares its message objects from step to step, so
 * a step hashes what it added, not the whole history again. A history read
 * back from a record (new objects) hashes each message once more, to the same
 * digest.
 */
import { createHash, type Hash } from 'node:crypto';
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

/**
 * The last history digested that starts with a given message object: its messages (a copy of the array, ours
 * alone), the hash state after them, and its digest. A step digests its history several times (prepareStep's
 * cache, the package's step, the request), each time the same messages or a few more: a history that extends
 * the kept one (the same objects in the same places) hashes only what it added.
 */
interface Kept {
  messages: ModelMessage[];
  state: Hash;
  digest: string;
}
const kept = new WeakMap<object, Kept>();

/** `sha256:` of the history's message hashes, in order. */
export function historyDigest(messages: readonly ModelMessage[]): string {
  const first = messages[0];
  if (typeof first !== 'object' || first === null) return digestFrom(createHash('sha256'), messages, 0);
  const known = kept.get(first);
  let from = 0;
  if (known && known.messages.length <= messages.length) {
    from = known.messages.length;
    for (let i = 1; i < from; i++) {
      if (known.messages[i] !== messages[i]) {
        from = 0;
        break;
      }
    }
  }
  if (known && from > 0 && from === messages.length) return known.digest;
  const h = from > 0 ? known!.state.copy() : createHash('sha256');
  for (let i = from; i < messages.length; i++) h.update(messageHash(messages[i]!));
  const state = h.copy();
  const digest = `sha256:${h.digest('hex')}`;
  if (known && from > 0) {
    for (let i = from; i < messages.length; i++) known.messages.push(messages[i]!);
    known.state = state;
    known.digest = digest;
  } else {
    kept.set(first, { messages: messages.slice(), state, digest });
  }
  return digest;
}

function digestFrom(h: Hash, messages: readonly ModelMessage[], from: number): string {
  for (let i = from; i < messages.length; i++) h.update(messageHash(messages[i]!));
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
