/**
 * Drafts of a JSON document that is still arriving.
 *
 * A model streams its structured answer a few characters at a time. To show
 * the answer while it grows, each prefix is read as far as it goes and the
 * open strings, arrays and objects are closed. Whatever might still change
 * its meaning is left out rather than guessed: a key without its value, a
 * number or literal the text stops inside (`[1, 2` could become `[1, 23]`),
 * a half-written escape sequence. So a draft only ever grows towards the
 * final value: a string becomes longer, a container gains entries, and a
 * value it shows is not replaced by a different one.
 */

/** What {@link parsePartialJson} makes of a prefix. */
export interface PartialJson {
  /** The draft: plain JSON data, closed where the text stops. */
  value: unknown;
  /**
   * The text (without a code fence around it) is a whole JSON document. A bare
   * top-level number is whole as soon as it is valid (`1` may still become `12`),
   * because nothing in the text says otherwise.
   */
  complete: boolean;
}

/** {@link PartialJson} plus what an element stream needs. */
export interface PartialJsonScan extends PartialJson {
  /**
   * When the top-level value is an array: how many of its leading elements are
   * whole (their text ended, so they cannot change any more). 0 otherwise.
   */
  finishedElements: number;
}

/**
 * Reads a JSON document that may be cut off anywhere and returns its best
 * draft, or `undefined` when the text holds no value yet (empty, a bare
 * `tru`, an opening code fence) or is not the beginning of a JSON document.
 * A leading Markdown code fence (```` ```json ````) and its closing fence are
 * allowed. Never throws.
 *
 * @example
 * parsePartialJson('{"name": "Ali');  // { value: { name: 'Ali' }, complete: false }
 * parsePartialJson('[1, 2');          // { value: [1], complete: false }
 * parsePartialJson('{"ok": true}');   // { value: { ok: true }, complete: true }
 */
export function parsePartialJson(text: string): PartialJson | undefined {
  const scan = scanPartialJson(text);
  return scan === undefined ? undefined : { value: scan.value, complete: scan.complete };
}

/** Like {@link parsePartialJson}, and also says which top-level array elements are whole. */
export function scanPartialJson(text: string): PartialJsonScan | undefined {
  const reader = new Reader(text);
  try {
    const fence = reader.openingFence();
    if (fence === 'pending') return undefined;
    const piece = reader.value();
    if (piece.value === NOTHING) return undefined;
    // A number that runs to the end of the text is whole only at the top level:
    // there, the text parses as it stands.
    const complete = piece.ended || piece.provisional === true;
    if (complete && !reader.onlyTrailer(fence)) return undefined;
    return { value: piece.value, complete, finishedElements: piece.finished ?? 0 };
  } catch (error) {
    // Not a JSON prefix, or nested deeper than the call stack allows.
    if (error === INVALID || error instanceof RangeError) return undefined;
    throw error;
  }
}

const NOTHING: unique symbol = Symbol('nothing');
const INVALID: unique symbol = Symbol('invalid');

/** One value as far as the text goes. */
interface Piece {
  /** `NOTHING` when the text stops before anything usable. */
  value: unknown;
  /** The value's text ended before the end of the input. */
  ended: boolean;
  /** A number that runs to the end of the input: it may still gain digits. */
  provisional?: boolean;
  /** For arrays: how many leading elements ended. */
  finished?: number;
}

const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const NUMBER_CHARS = /[0-9eE+\-.]*/y;
const STRING_SPECIAL = /["\\\u0000-\u001f]/g;
const HEX4 = /^[0-9a-fA-F]{4}$/;
const HEX_PREFIX = /^[0-9a-fA-F]{0,3}$/;
const FENCE_OPEN = /```[\w.+-]*[ \t]*\r?\n/y;
const FENCE_OPEN_PREFIX = /^(?:`{1,2}|```[\w.+-]*[ \t]*\r?)$/;
const FENCE_CLOSE_PREFIX = /^`{1,2}$/;
const ESCAPES: Record<string, string> = {
  '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t',
};

class Reader {
  private pos = 0;
  constructor(private readonly text: string) {}

  /** Skips a leading code fence; `'pending'` while the text is still inside its opening line. */
  openingFence(): boolean | 'pending' {
    this.skipSpace();
    if (this.text[this.pos] !== '`') return false;
    FENCE_OPEN.lastIndex = this.pos;
    const match = FENCE_OPEN.exec(this.text);
    if (match !== null) {
      this.pos += match[0].length;
      return true;
    }
    if (FENCE_OPEN_PREFIX.test(this.text.slice(this.pos))) return 'pending';
    throw INVALID;
  }

  /** After a whole value: only whitespace, or (when fenced) the closing fence and anything after it. */
  onlyTrailer(fenced: boolean): boolean {
    this.skipSpace();
    if (this.pos >= this.text.length) return true;
    if (!fenced) return false;
    const rest = this.text.slice(this.pos);
    return rest.startsWith('```') || FENCE_CLOSE_PREFIX.test(rest);
  }

  value(): Piece {
    this.skipSpace();
    if (this.pos >= this.text.length) return { value: NOTHING, ended: false };
    const c = this.text[this.pos];
    switch (c) {
      case '{': return this.object();
      case '[': return this.array();
      case '"': return this.string();
      case 't': return this.literal('true', true);
      case 'f': return this.literal('false', false);
      case 'n': return this.literal('null', null);
      case '-': return this.number();
      default:
        if (c !== undefined && c >= '0' && c <= '9') return this.number();
        throw INVALID;
    }
  }

  private object(): Piece {
    this.pos++;
    const object: Record<string, unknown> = {};
    const open = { value: object, ended: false };
    this.skipSpace();
    if (this.atEnd()) return open;
    if (this.text[this.pos] === '}') {
      this.pos++;
      return { value: object, ended: true };
    }
    for (;;) {
      this.skipSpace();
      if (this.atEnd()) return open;
      if (this.text[this.pos] !== '"') throw INVALID;
      const key = this.string();
      if (!key.ended) return open;
      this.skipSpace();
      if (this.atEnd()) return open;
      if (this.text[this.pos] !== ':') throw INVALID;
      this.pos++;
      const entry = this.value();
      if (isUsable(entry)) setOwn(object, key.value as string, entry.value);
      if (!entry.ended) return open;
      this.skipSpace();
      if (this.atEnd()) return open;
      const c = this.text[this.pos++];
      if (c === '}') return { value: object, ended: true };
      if (c !== ',') throw INVALID;
    }
  }

  private array(): Piece {
    this.pos++;
    const array: unknown[] = [];
    this.skipSpace();
    if (this.atEnd()) return { value: array, ended: false, finished: 0 };
    if (this.text[this.pos] === ']') {
      this.pos++;
      return { value: array, ended: true, finished: 0 };
    }
    for (;;) {
      const element = this.value();
      if (isUsable(element)) array.push(element.value);
      if (!element.ended) return { value: array, ended: false, finished: array.length - (isUsable(element) ? 1 : 0) };
      this.skipSpace();
      if (this.atEnd()) return { value: array, ended: false, finished: array.length };
      const c = this.text[this.pos++];
      if (c === ']') return { value: array, ended: true, finished: array.length };
      if (c !== ',') throw INVALID;
    }
  }

  private string(): Piece {
    this.pos++;
    let out = '';
    for (;;) {
      STRING_SPECIAL.lastIndex = this.pos;
      const match = STRING_SPECIAL.exec(this.text);
      if (match === null) {
        out += this.text.slice(this.pos);
        this.pos = this.text.length;
        return { value: out, ended: false };
      }
      out += this.text.slice(this.pos, match.index);
      this.pos = match.index;
      const c = match[0];
      if (c === '"') {
        this.pos++;
        return { value: out, ended: true };
      }
      if (c !== '\\') throw INVALID; // a raw control character
      const decoded = this.escape();
      // A half-written escape at the end of the text is left out.
      if (decoded === undefined) return { value: out, ended: false };
      out += decoded;
    }
  }

  /** Decodes the escape at `pos` (a backslash); `undefined` when the text stops inside it. */
  private escape(): string | undefined {
    const kind = this.text[this.pos + 1];
    if (kind === undefined) {
      this.pos = this.text.length;
      return undefined;
    }
    if (kind === 'u') {
      const hex = this.text.slice(this.pos + 2, this.pos + 6);
      if (HEX4.test(hex)) {
        this.pos += 6;
        return String.fromCharCode(Number.parseInt(hex, 16));
      }
      if (this.pos + 6 > this.text.length && HEX_PREFIX.test(hex)) {
        this.pos = this.text.length;
        return undefined;
      }
      throw INVALID;
    }
    const simple = ESCAPES[kind];
    if (simple === undefined) throw INVALID;
    this.pos += 2;
    return simple;
  }

  private literal(word: string, value: unknown): Piece {
    const rest = this.text.slice(this.pos, this.pos + word.length);
    if (rest === word) {
      this.pos += word.length;
      return { value, ended: true };
    }
    if (this.pos + rest.length === this.text.length && word.startsWith(rest)) {
      this.pos = this.text.length;
      return { value: NOTHING, ended: false };
    }
    throw INVALID;
  }

  private number(): Piece {
    NUMBER_CHARS.lastIndex = this.pos;
    const raw = NUMBER_CHARS.exec(this.text)![0];
    this.pos += raw.length;
    const valid = NUMBER.test(raw);
    // Still growing: `1.` or `-` may yet become a number, `12` may become `123`.
    if (this.atEnd()) return { value: valid ? Number(raw) : NOTHING, ended: false, provisional: valid };
    if (!valid) throw INVALID;
    return { value: Number(raw), ended: true };
  }

  private skipSpace(): void {
    for (;;) {
      const c = this.text.charCodeAt(this.pos);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) this.pos++;
      else return;
    }
  }

  private atEnd(): boolean {
    return this.pos >= this.text.length;
  }
}

/** A piece a container may show: a whole value, or an open string, array or object. */
function isUsable(piece: Piece): boolean {
  return piece.value !== NOTHING && piece.provisional !== true;
}

/** Sets a key as an own data property, as JSON.parse does (`__proto__` included). */
function setOwn(object: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
}
