/**
 * Command-line parsing for `cairn`: node:util parseArgs with strict options,
 * and the few value formats the commands share (`<callId>=<json>`, counts).
 * Every mistake is a UsageError: the CLI prints it and exits 2, before it has
 * opened a store or written anything.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { CairnError } from '../errors/index.js';

/**
 * The command line was wrong. main prints the message and exits with
 * HEADLESS_EXIT_CODES.usage. A Cairn error like any other: code
 * `invalid_options`, the user's to fix.
 */
export class UsageError extends CairnError {
  constructor(message: string) {
    super('invalid_options', message, { fault: 'user' });
    this.name = 'UsageError';
  }
}

export type OptionSpecs = NonNullable<ParseArgsConfig['options']>;

/** Options every command takes. */
export const HELP_OPTION = { help: { type: 'boolean', short: 'h' } } as const satisfies OptionSpecs;

export interface Parsed {
  values: Record<string, string | boolean | string[] | boolean[] | undefined>;
  positionals: string[];
}

/**
 * `--name -1` as `--name=-1` for a string option: parseArgs calls a value that
 * starts with a dash ambiguous, and a negative number is still the value the
 * user meant, to be refused with a plain message by the flag's own check.
 */
function joinNegativeValues(argv: string[], options: OptionSpecs): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const name = arg.startsWith('--') ? arg.slice(2) : undefined;
    const next = argv[i + 1];
    if (name !== undefined && Object.hasOwn(options, name) && options[name]!.type === 'string' && next !== undefined && /^-[\d.]/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

/** parseArgs, with its errors turned into one-line UsageErrors. */
export function parse(argv: string[], options: OptionSpecs): Parsed {
  try {
    const args = joinNegativeValues(argv, options);
    const { values, positionals } = parseArgs({ args, options: { ...options, ...HELP_OPTION }, strict: true, allowPositionals: true });
    return { values: values as Parsed['values'], positionals };
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
    throw new UsageError(message.replace(/\.$/, '') + '.');
  }
}

export const str = (parsed: Parsed, name: string): string | undefined => {
  const v = parsed.values[name];
  return typeof v === 'string' ? v : undefined;
};

export const strs = (parsed: Parsed, name: string): string[] => {
  const v = parsed.values[name];
  return Array.isArray(v) ? (v as string[]) : typeof v === 'string' ? [v] : [];
};

export const flag = (parsed: Parsed, name: string): boolean => parsed.values[name] === true;

/**
 * A whole-number flag value from `min` to `max` (no upper bound by default),
 * refused with a plain message: `--max-steps must be a whole number of at
 * least 1, got -1.` `unit` names what it counts (`milliseconds`).
 */
export function wholeNumber(
  name: string, value: string | undefined, min: number, max = Number.MAX_SAFE_INTEGER, unit = '',
): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    const what = `a whole number${unit ? ` of ${unit}` : ''}`;
    const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
    const shown = value === '' ? 'nothing' : /^[\w.+-]+$/.test(value) ? value : JSON.stringify(value);
    throw new UsageError(`--${name} must be ${what} ${range}, got ${shown}.`);
  }
  return Number(value);
}

/** A positive whole-number flag value (`--max-steps 2`). */
export function positiveInt(name: string, value: string | undefined, max = Number.MAX_SAFE_INTEGER): number | undefined {
  return wholeNumber(name, value, 1, max);
}

/** `<callId>=<json>`: the call id, then a JSON value (quote strings: `c1='"done"'`). */
export function idEqualsJson(name: string, value: string): { id: string; json: unknown } {
  const at = value.indexOf('=');
  if (at <= 0) throw new UsageError(`--${name} takes <callId>=<json>, got ${JSON.stringify(value)}.`);
  const id = value.slice(0, at);
  const text = value.slice(at + 1);
  try {
    return { id, json: JSON.parse(text) };
  } catch {
    throw new UsageError(
      `--${name} ${id}=...: the value after '=' must be JSON (a string needs its own quotes: ${id}='"text"'), got ${JSON.stringify(text)}.`,
    );
  }
}

/** Refuses ids a shell user could not pass back: empty, or taken for a flag. */
export function checkId(what: string, id: string): string {
  if (id === '') throw new UsageError(`${what} must not be empty.`);
  if (id.startsWith('-')) throw new UsageError(`${what} must not start with '-' (it would read as a flag), got ${JSON.stringify(id)}.`);
  return id;
}

/** No more positionals than the command takes. */
export function atMost(parsed: Parsed, count: number, command: string): void {
  if (parsed.positionals.length > count) {
    const extra = parsed.positionals.slice(count).map((p) => JSON.stringify(p)).join(' ');
    throw new UsageError(`cairn ${command} got unexpected argument(s): ${extra}.`);
  }
}
