/**
 * The Redis store's connection: one node-redis client per store object,
 * connected on first use, Lua scripts run by their sha (sent again in full
 * when the server has forgotten them, as after a restart), and every driver
 * failure turned into a typed error that keeps the driver's error as cause.
 *
 * Nothing is ever sent twice. Commands are not queued while the client is
 * offline: a call waits (up to `connectTimeoutMs`) for the connection, then
 * sends. A command in flight when the connection drops, or that gets no
 * answer in `commandTimeoutMs` (the connection is then ended, so no later
 * answer is taken for another's), rejects with PersistenceError, and the
 * caller finds out what landed by reading (a save's fenced revision makes a
 * second try of the same save a conflict, never a second write). The only
 * resend is of a command the server refused unrun: NOSCRIPT, or LOADING
 * while it reads its append-only file after a restart.
 *
 * A lost connection is made again in the background a few times; after that
 * the client lets go (no timer, no socket keeps the process alive) and the
 * next call connects anew.
 */
import { createHash } from 'node:crypto';
import { createClient, RESP_TYPES } from 'redis';
import { CairnError, InvalidOptionsError, PersistenceError } from '../../errors/index.js';
import { StoreUnreachableError } from './errors.js';
import { checkServer } from './server-check.js';

/** A reply as the store reads it: bulk strings as Buffers (binary) or strings. */
export type Reply = null | number | string | Buffer | Reply[];

/** A Lua script and its sha1, as EVALSHA names it. */
export interface Script {
  source: string;
  sha: string;
}

/**
 * A script that writes (`'write'`) or only reads (`'read'`). The first line
 * declares it (Redis 7 script flags): a server short of memory then refuses a
 * writing script before it runs, and still runs one that declares it writes
 * nothing.
 */
export function script(mode: 'write' | 'read', body: string): Script {
  const source = `${mode === 'read' ? '#!lua flags=no-writes' : '#!lua'}\n${body}`;
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

/** A command argument: text, or bytes. */
export type Arg = string | number | Uint8Array;

type Client = ReturnType<typeof createClient>;

/** Background reconnects after a lost connection before the client lets go. */
const RECONNECTS = 8;

/** The URL without its password, for messages. */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}

export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
const kindOf = (error: unknown) => (error instanceof Error ? error.constructor.name : '');
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const asArg = (value: Arg): string | Buffer =>
  typeof value === 'number' ? String(value) : typeof value === 'string' ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);

export interface RedisConnOptions {
  url: string;
  connectTimeoutMs: number;
  commandTimeoutMs: number;
}

/** A command whose answer did not come within `commandTimeoutMs`. */
class CommandTimeout extends Error {}

export class RedisConn {
  private client: Client;
  private readonly shown: string;
  /** The connect in progress; null when none is. */
  private opening: Promise<void> | null = null;
  /** Whether the server was checked (version, eviction policy): once per store object. */
  private checked = false;
  private closed = false;

  constructor(private readonly options: RedisConnOptions) {
    const { url } = options;
    if (typeof url !== 'string' || !/^rediss?:\/\/[^\s]+$/.test(url)) {
      throw new InvalidOptionsError(`createRedisOpsStore needs { url } of the form redis://host:port (or rediss://), got ${JSON.stringify(url)}.`);
    }
    this.shown = shownUrl(url);
    this.client = this.newClient();
  }

  private newClient(): Client {
    let wasReady = false;
    const client = createClient({
      url: this.options.url,
      disableOfflineQueue: true,
      socket: {
        connectTimeout: this.options.connectTimeoutMs,
        // A connect that fails is retried by connect() (until its deadline); a lost connection is made again here, a few times.
        reconnectStrategy: (retries: number, cause: Error) =>
          (wasReady && !this.closed && retries < RECONNECTS ? Math.min(50 * 2 ** retries, 1_000) : cause),
      },
    });
    client.on('ready', () => {
      wasReady = true;
    });
    // Without a listener an 'error' event would end the process; a failure also rejects the command, where it is handled.
    client.on('error', () => undefined);
    return client;
  }

  /** Connects (or waits for a reconnect) within `connectTimeoutMs`; StoreUnreachableError when the server does not answer. */
  connect(): Promise<void> {
    if (this.closed) return Promise.reject(new PersistenceError(`The Redis store for ${this.shown} is closed.`));
    if (this.client.isReady && this.checked) return Promise.resolve();
    this.opening ??= this.open().finally(() => {
      this.opening = null;
    });
    return this.opening;
  }

  private async open(): Promise<void> {
    const { connectTimeoutMs } = this.options;
    const deadline = Date.now() + connectTimeoutMs;
    let last: unknown;
    for (let attempt = 0; !this.closed; attempt++) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      try {
        await this.within(left, this.reach());
        if (!this.checked) {
          await this.within(deadline - Date.now(), checkServer(this.client, this.shown, deadline));
          this.checked = true;
        }
        return;
      } catch (error) {
        if (CairnError.isInstance(error)) throw error;
        last = error;
        if (!this.client.isReady) {
          // A client stuck half way (no handshake answer) is dropped; the next attempt starts clean.
          try {
            this.client.destroy();
          } catch {
            // A client destroyed half way through its handshake may throw; it is dropped either way.
          }
          this.client = this.newClient();
        }
        await sleep(Math.min(50 * 2 ** attempt, 500, Math.max(0, deadline - Date.now())));
      }
    }
    if (this.closed) throw new PersistenceError(`The Redis store for ${this.shown} is closed.`);
    throw new StoreUnreachableError(this.shown, connectTimeoutMs,
      `Redis at ${this.shown} did not answer within ${connectTimeoutMs} ms${last === undefined ? '' : ` (${messageOf(last)})`}. Check the URL and that redis-server is running; nothing was written.`,
      last);
  }

  /** The client ready: connects it, or waits while it reconnects on its own. */
  private async reach(): Promise<void> {
    const client = this.client;
    // Ends when the client is replaced (a timed-out attempt) or the store closed.
    while (!client.isReady && client === this.client && !this.closed) {
      if (!client.isOpen) {
        await client.connect();
        return;
      }
      await sleep(20);
    }
  }

  private async within<T>(ms: number, work: Promise<T>): Promise<T> {
    work.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.options.connectTimeoutMs} ms`)), Math.max(0, ms));
    });
    try {
      return await Promise.race([work, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Runs one command; `binary` returns bulk strings as Buffers. */
  call<T extends Reply = Reply>(what: string, args: readonly Arg[], binary = false): Promise<T> {
    return this.send(what, [args.map(asArg)], binary) as Promise<T>;
  }

  /** Runs a Lua script by its sha, sending the source when the server does not have it. */
  eval<T extends Reply = Reply>(what: string, s: Script, keys: readonly string[], args: readonly Arg[], binary = false): Promise<T> {
    const tail = [String(keys.length), ...keys, ...args.map(asArg)];
    return this.send(what, [['EVALSHA', s.sha, ...tail], ['EVAL', s.source, ...tail]], binary) as Promise<T>;
  }

  /** Sends `forms[0]`; on NOSCRIPT the next form. A command the server refused unrun while loading is sent again. */
  private async send(what: string, forms: (string | Buffer)[][], binary: boolean): Promise<Reply> {
    const options = binary ? { typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer } } : undefined;
    const deadline = Date.now() + this.options.connectTimeoutMs;
    let form = 0;
    for (;;) {
      await this.connect();
      try {
        return await this.answer(forms[form]!, options);
      } catch (error) {
        const message = messageOf(error);
        if (message.startsWith('NOSCRIPT') && form + 1 < forms.length) {
          form++;
          continue;
        }
        if (message.startsWith('LOADING') && Date.now() < deadline) {
          await sleep(50);
          continue;
        }
        throw this.fail(what, error);
      }
    }
  }

  /**
   * The answer to one command, within `commandTimeoutMs`. The driver's own timeout covers only the wait to be
   * written; once a command is on the wire its answer can only be waited for, so one that does not come in time
   * ends the connection (every command in flight on it then fails; none is left to take another's answer) and
   * the next call connects anew.
   */
  private async answer(form: (string | Buffer)[], options: Parameters<Client['sendCommand']>[1]): Promise<Reply> {
    const client = this.client;
    const reply = client.sendCommand(form, options) as Promise<Reply>;
    reply.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new CommandTimeout()), this.options.commandTimeoutMs);
    });
    try {
      return await Promise.race([reply, late]);
    } catch (error) {
      if (error instanceof CommandTimeout && client === this.client) {
        try {
          client.destroy();
        } catch {
          // Already closing: it is dropped either way.
        }
        this.client = this.newClient();
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  private fail(what: string, error: unknown): CairnError {
    if (CairnError.isInstance(error)) return error;
    const kind = kindOf(error);
    if (kind === 'ClientOfflineError' || kind === 'ClientClosedError') {
      // Refused by the client before sending: nothing reached the server.
      return new StoreUnreachableError(this.shown, this.options.connectTimeoutMs,
        `${what} was not sent: the connection to Redis at ${this.shown} is down; nothing was written.`, error);
    }
    if (error instanceof CommandTimeout) {
      return new PersistenceError(`${what}: Redis at ${this.shown} did not answer within ${this.options.commandTimeoutMs} ms; the command may or may not have run.`, error);
    }
    if (kind === 'SocketClosedUnexpectedlyError') {
      return new PersistenceError(`${what}: the connection to Redis at ${this.shown} was lost before the answer; the command may or may not have run.`, error);
    }
    return new PersistenceError(`${what} failed on Redis at ${this.shown}: ${messageOf(error)}`, error);
  }

  /** Closes the connection (waiting for replies in flight); calls after it fail. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.opening?.catch(() => undefined);
    if (this.client.isOpen) await this.client.close().catch(() => this.client.destroy());
  }
}

/** Text of a reply that holds text (bulk strings read as Buffers included); null for a nil. */
export function text(reply: Reply | undefined): string | null {
  if (reply === null || reply === undefined) return null;
  if (Buffer.isBuffer(reply)) return reply.toString('utf8');
  if (typeof reply === 'string') return reply;
  if (typeof reply === 'number') return String(reply);
  return null;
}

/** A number kept as text; null for a nil. */
export function num(reply: Reply | undefined): number | null {
  const t = text(reply);
  return t === null ? null : Number(t);
}

/** Bytes of a bulk-string reply. */
export function bytes(reply: Reply | undefined): Buffer {
  if (Buffer.isBuffer(reply)) return reply;
  if (typeof reply === 'string') return Buffer.from(reply, 'utf8');
  return Buffer.alloc(0);
}

export const list = (reply: Reply | undefined): Reply[] => (Array.isArray(reply) ? reply : []);
