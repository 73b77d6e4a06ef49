/**
 * Server-sent events of a streamed answer (the WHATWG event-stream format:
 * `event:` and `data:` lines, a blank line ends an event, `:` starts a
 * comment). A body that ends early is simply the end of the events: each wire
 * decides what a stream without its closing event means. A body that errors
 * (a cut connection, the transport timeout) rejects the iteration. Given the
 * provider and endpoint, the reader also turns a cut connection into an
 * APICallError and refuses a body that held no event but other text (a
 * server that answered a stream request with something else) as
 * `invalid_response`.
 */
import { invalidResponse } from './http.js';
import { bodyReadError } from './transport.js';

export interface SseEvent {
  event: string | undefined;
  data: string;
}

/** Parses event-stream text fed in arbitrary pieces. */
export class SseParser {
  private buffer = '';
  private event: string | undefined = undefined;
  private data: string[] = [];
  private strayText = '';

  /**
   * Lines that were neither a field the format knows (`data`, `event`,
   * `id`, `retry`) nor a comment, up to 2,000 characters: the format says to
   * ignore them; a reader may take them as a sign the body is not SSE.
   */
  get stray(): string {
    return this.strayText;
  }

  /** Feeds a piece of text; returns the events it completed. */
  feed(text: string): SseEvent[] {
    this.buffer += text;
    const out: SseEvent[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      // A lone '\r' at the end may be the first half of '\r\n': wait for more.
      if (!match || (match[0] === '\r' && match.index === this.buffer.length - 1)) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const event = this.line(line);
      if (event) out.push(event);
    }
    return out;
  }

  /** The event left open when the body ended without its blank line, if any. */
  end(): SseEvent[] {
    const out = this.buffer !== '' ? this.feed('\n') : [];
    const last = this.line('');
    return last ? [...out, last] : out;
  }

  private line(line: string): SseEvent | undefined {
    if (line === '') {
      if (this.data.length === 0) {
        this.event = undefined;
        return undefined;
      }
      const event = { event: this.event, data: this.data.join('\n') };
      this.event = undefined;
      this.data = [];
      return event;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field !== 'id' && field !== 'retry' && this.strayText.length < 2000) this.strayText += `${line}\n`;
    return undefined;
  }
}

/** Who sent the stream, so its failures can name them. */
export interface SseSource {
  provider: string;
  url: string;
}

/**
 * The events of a response's body. With `source`, a read that fails (other
 * than the caller's abort) rejects with an APICallError naming the provider
 * and the endpoint, and a body with no event but other text rejects with
 * `invalid_response`.
 */
export async function* readSse(response: Response, signal?: AbortSignal, source?: SseSource): AsyncGenerator<SseEvent> {
  if (!response.body) return;
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  let finished = false;
  let events = 0;
  try {
    for (;;) {
      if (signal?.aborted) throw signal.reason;
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        throw source ? bodyReadError(error, { ...source, signal }) : error;
      }
      if (chunk.done) break;
      for (const event of parser.feed(decoder.decode(chunk.value, { stream: true }))) {
        events++;
        yield event;
      }
    }
    finished = true;
    for (const event of parser.end()) {
      events++;
      yield event;
    }
    if (source && events === 0 && parser.stray.trim() !== '') {
      throw invalidResponse(source.provider, source.url, 'a body that is not an event stream', parser.stray);
    }
  } finally {
    // Stop the download when the consumer stops early or the body failed.
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
