/**
 * The Redis store's connection: one node-redis client per store object,
 * connected on first use, Lua scripts run by their sha (sent again in full
 * when the server has forgotten them, as after a restart), and every driver
 * failure turned into a typed PersistenceError that keeps the driver's error
 * as its cause.
 *
 * Commands are never queued while the client is offline and never sent twice:
 * a command in flight when the connection drops rejects, and the caller finds
 * out what landed by reading (a save's fenced revision makes a second try of
 * the same save a conflict, never a second write).
 */
import { createHash } from 'node:crypto';
import { createClient, RESP_TYPES } from 'redis';
import { CairnError, InvalidOptionsError, PersistenceError } from '../../errors/index.js';

/** A reply as the store reads it: bulk strings as Buffers (binary) or strings. */
export type Reply = null | number | string | Buffer | Reply[];

/** A Lua script and its sha1, as EVALSHA names it. */
export interface Script {
  source: string;
  sha: string;
}

export function script(source: string): Script {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

/** A command argument: text, or bytes. */
export type Arg = string | number | Uint8Array;

const BINARY = { typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer } };

type Client = ReturnType<typeof createClient>;

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

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

const asArg = (value: Arg): string | Buffer =>
  typeof value === 'number' ? String(value) : typeof value === 'string' ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);

export interface RedisConnOptions {
  url: string;
  connectTimeoutMs: number;
}

export class RedisConn {
  private readonly client: Client;
  private readonly shown: string;
  /** The connect in progress or done; null before the first and after a failed one. */
  private ready: Promise<void> | null = null;
  private connected = false;
  private closed = false;

  constructor(options: RedisConnOptions) {
    const { url, connectTimeoutMs } = options;
    if (typeof url !== 'string' || !/^rediss?:\/\//.test(url)) {
      throw new InvalidOptionsError(`createRedisOpsStore needs { url } of the form redis://host:port (or rediss://), got ${JSON.stringify(url)}.`);
    }
    this.shown = shownUrl(url);
    this.client = createClient({
      url,
      disableOfflineQueue: true,
      socket: {
        connectTimeout: connectTimeoutMs,
        // Before the first connection: fail the connect at once with the cause. After it: reconnect in the
        // background, backing off to 2 s; commands sent meanwhile fail (nothing is queued).
        reconnectStrategy: (retries: number, cause: Error) => (this.connected && !this.closed ? Math.min(50 * 2 ** retries, 2_000) : cause),
      },
    });
    // Without a listener an 'error' event would end the process; the failure also rejects the command, where it is handled.
    this.client.on('error', () => undefined);
  }

  /** Connects, once; a failed connect is tried again by the next call. */
  connect(): Promise<void> {
    if (this.closed) return Promise.reject(new PersistenceError(`The Redis store for ${this.shown} is closed.`));
    this.ready ??= this.client.connect().then(
      () => {
        this.connected = true;
      },
      (error: unknown) => {
        this.ready = null;
        throw new PersistenceError(
          `Redis at ${this.shown} does not answer: ${messageOf(error)}. Check the URL and that redis-server is running.`,
          error,
        );
      },
    );
    return this.ready;
  }

  /** Runs one command; `binary` returns bulk strings as Buffers. */
  async call<T extends Reply = Reply>(what: string, args: readonly Arg[], binary = false): Promise<T> {
    await this.connect();
    try {
      return await this.client.sendCommand(args.map(asArg), binary ? BINARY : undefined) as T;
    } catch (error) {
      throw this.fail(what, error);
    }
  }

  /** Runs a Lua script by its sha, sending the source when the server does not have it. */
  async eval<T extends Reply = Reply>(what: string, s: Script, keys: readonly string[], args: readonly Arg[], binary = false): Promise<T> {
    await this.connect();
    const tail = [String(keys.length), ...keys, ...args.map(asArg)];
    const options = binary ? BINARY : undefined;
    try {
      try {
        return await this.client.sendCommand(['EVALSHA', s.sha, ...tail], options) as T;
      } catch (error) {
        if (!messageOf(error).startsWith('NOSCRIPT')) throw error;
        return await this.client.sendCommand(['EVAL', s.source, ...tail], options) as T;
      }
    } catch (error) {
      throw this.fail(what, error);
    }
  }

  private fail(what: string, error: unknown): CairnError {
    if (CairnError.isInstance(error)) return error;
    return new PersistenceError(`${what} failed on Redis at ${this.shown}: ${messageOf(error)}`, error);
  }

  /** Closes the connection (waiting for replies in flight); calls after it fail. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const ready = this.ready;
    if (!ready) return;
    await ready.catch(() => undefined);
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
