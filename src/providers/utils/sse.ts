/**
 * Server-sent events of a streamed answer (the WHATWG event-stream format:
 * `event:` and `data:` lines, a blank line ends an event, `:` starts a
 * comment). A body that ends early is simply the end of the events: each wire
 * decides what a stream without its closing event means. A body that errors
 * (a cut connection, the transport timeout) rejects the iteration.
 */

export interface SseEvent {
  event: string | undefined;
  data: string;
}

/** Parses event-stream text fed in arbitrary pieces. */
export class SseParser {
  private buffer = '';
  private event: string | undefined = undefined;
  private data: string[] = [];

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
    return undefined;
  }
}

export async function* readSse(response: Response, signal?: AbortSignal): AsyncGenerator<SseEvent> {
  if (!response.body) return;
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  let finished = false;
  try {
    for (;;) {
      if (signal?.aborted) throw signal.reason;
      const { done, value } = await reader.read();
      if (done) break;
      yield* parser.feed(decoder.decode(value, { stream: true }));
    }
    finished = true;
    yield* parser.end();
  } finally {
    // Stop the download when the consumer stops early or the body failed.
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
