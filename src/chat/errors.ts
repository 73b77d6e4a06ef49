/** The chat stores' typed error. */
import { CairnError } from '../errors/index.js';

/**
 * A chat id that is not a non-empty string, or a chat record that is not
 * well-formed (messages and messageIds of different lengths, an id that is
 * not a non-empty string or is used twice, a scope with an unknown or
 * prototype-named key, a record of another chat id). Nothing was written by
 * the call that threw it.
 */
export class ChatStoreError extends CairnError {
  /** The chat the call named, when it named one that is a string. */
  readonly chatId?: string;

  constructor(message: string, chatId?: string) {
    super('chat_record_invalid', message, { fault: 'user' });
    this.name = 'ChatStoreError';
    if (chatId !== undefined) this.chatId = chatId;
  }
}
