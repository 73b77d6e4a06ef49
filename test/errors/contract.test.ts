/**
 * The error contract's own pieces: the code list and the union are one thing,
 * every code is documented, a CairnTypeError is a TypeError and a Cairn error
 * at once, and serializeError gives anything thrown a code from the list.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  APICallError, CAIRN_ERROR_CODES, CairnError, CairnTypeError, InvalidOptionsError, ModelCallError, RevisionConflictError,
  RunIdentityError, isCairnErrorCode, serializeError, type CairnErrorCode, type SerializedError,
} from 'cairn/agent';
import { InjectedFaultError } from 'cairn/testing';
import { UsageError } from '../../src/cli/args.js';

const docs = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

/** The codes in the first column of docs/errors.md's "Codes" table. */
function documentedCodes(): string[] {
  const section = docs.slice(docs.indexOf('\n## Codes\n'), docs.indexOf('\n## ', docs.indexOf('\n## Codes\n') + 1));
  return [...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]!);
}

describe('the code list', () => {
  it('is the union: SerializedError.code, CairnError.code and the list name the same codes', () => {
    expectTypeOf<(typeof CAIRN_ERROR_CODES)[number]>().toEqualTypeOf<CairnErrorCode>();
    expectTypeOf<SerializedError['code']>().toEqualTypeOf<CairnErrorCode>();
    expectTypeOf<CairnError['code']>().toEqualTypeOf<CairnErrorCode>();
    expectTypeOf<CairnTypeError['code']>().toEqualTypeOf<CairnErrorCode>();
    // A code outside the union does not compile where a serialized error is built.
    // @ts-expect-error 'error' is not a Cairn code
    const bad: SerializedError = { name: 'Error', code: 'error', message: 'x' };
    expect(isCairnErrorCode(bad.code)).toBe(false);
  });

  it('holds each code once, in snake case, and isCairnErrorCode knows exactly those', () => {
    expect(new Set(CAIRN_ERROR_CODES).size).toBe(CAIRN_ERROR_CODES.length);
    for (const code of CAIRN_ERROR_CODES) {
      expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(isCairnErrorCode(code)).toBe(true);
    }
    for (const other of ['error', 'ECONNRESET', 'unknown', '', 'Internal', undefined, 7]) expect(isCairnErrorCode(other)).toBe(false);
  });

  it('is the list docs/errors.md documents, row for row', () => {
    expect(documentedCodes().sort()).toEqual([...CAIRN_ERROR_CODES].sort());
  });

  it('has every code the sources construct a Cairn error or a serialized error with', () => {
    // A literal code passed to a Cairn error class, or written as `code: '...'` beside a name: each must be in the list.
    const out = execFileSync('grep', ['-rhoE', "new (CairnError|CairnTypeError|InvalidOptionsError|RunIdentityError)\\('[a-z_]+'", 'src'], {
      cwd: new URL('../../', import.meta.url),
      encoding: 'utf8',
    });
    const used = new Set([...out.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]!));
    expect(used.size).toBeGreaterThan(3);
    for (const code of used) expect(CAIRN_ERROR_CODES, code).toContain(code);
  });
});

describe('CairnTypeError', () => {
  const refusal = new CairnTypeError('invalid_options', 'approvalResponses must be a list.');
  const unknownRun = new CairnTypeError('run_not_found', 'inspectRun: no run "x" in this store.', { runId: 'x' });

  it('is a TypeError and a Cairn error, with the fields of one', () => {
    for (const error of [refusal, unknownRun]) {
      expect(error).toBeInstanceOf(TypeError);
      expect(error).toBeInstanceOf(Error);
      expect(CairnError.isInstance(error)).toBe(true);
      expect(error instanceof CairnError).toBe(true);
      expect(CairnTypeError.isInstance(error)).toBe(true);
      expect(error.name).toBe('TypeError');
      expect(error.fault).toBe('user');
      expect(error.isRetryable).toBe(false);
    }
    expect(refusal.code).toBe('invalid_options');
    expect(unknownRun).toMatchObject({ code: 'run_not_found', runId: 'x' });
  });

  it('answers to the class it stands for, and to no other', () => {
    expect(InvalidOptionsError.isInstance(refusal)).toBe(true);
    expect(refusal instanceof InvalidOptionsError).toBe(true);
    expect(RunIdentityError.isInstance(refusal)).toBe(false);
    expect(RunIdentityError.isInstance(unknownRun)).toBe(true);
    expect(unknownRun instanceof RunIdentityError).toBe(true);
    expect(InvalidOptionsError.isInstance(unknownRun)).toBe(false);
    expect(RevisionConflictError.isInstance(refusal)).toBe(false);
    expect(refusal instanceof ModelCallError).toBe(false);
  });

  it('is not confused with a plain TypeError, or a plain TypeError with one', () => {
    const plain = new TypeError('x');
    expect(CairnError.isInstance(plain)).toBe(false);
    expect(plain instanceof CairnError).toBe(false);
    expect(CairnTypeError.isInstance(plain)).toBe(false);
    expect(InvalidOptionsError.isInstance(plain)).toBe(false);
    expect(CairnTypeError.isInstance(new InvalidOptionsError('x'))).toBe(false);
    // An Error that only borrows a Cairn name is not one.
    expect(InvalidOptionsError.isInstance(Object.assign(new Error('x'), { name: 'InvalidOptionsError' }))).toBe(false);
  });

  it('serializes as the TypeError it is, with its code', () => {
    expect(serializeError(refusal)).toEqual({ name: 'TypeError', code: 'invalid_options', message: 'approvalResponses must be a list.' });
    expect(JSON.parse(JSON.stringify(serializeError(unknownRun)))).toEqual({
      name: 'TypeError', code: 'run_not_found', message: 'inspectRun: no run "x" in this store.',
    });
  });
});

describe('instanceof follows the prototype chain, and the marker', () => {
  it('keeps subclassing as it was', () => {
    const api = new APICallError({ message: 'bad gateway', provider: 'openai', url: 'https://x/v1?key=1', statusCode: 502, isRetryable: true });
    expect(api instanceof ModelCallError).toBe(true);
    expect(api instanceof CairnError).toBe(true);
    expect(new ModelCallError('x') instanceof APICallError).toBe(false);
    expect(APICallError.isInstance(new ModelCallError('x'))).toBe(false);
  });

  it('recognises a Cairn error of another copy of the package by its marker and name', () => {
    const foreignCopy = Object.assign(new Error('Run r: save expected stored revision 2, found 3.'), {
      [Symbol.for('cairn.error')]: true, name: 'RevisionConflictError', code: 'revision_conflict',
    });
    expect(foreignCopy instanceof RevisionConflictError).toBe(true);
    expect(foreignCopy instanceof CairnError).toBe(true);
    expect(foreignCopy instanceof InvalidOptionsError).toBe(false);
  });

  it('makes the CLI usage error and the injected fault Cairn errors too', () => {
    const usage = new UsageError('--store must be a file path.');
    expect(usage).toMatchObject({ name: 'UsageError', code: 'invalid_options', fault: 'user' });
    expect(CairnError.isInstance(usage)).toBe(true);
    expect(usage instanceof UsageError).toBe(true);
    const fault = new InjectedFaultError();
    expect(fault).toMatchObject({ name: 'InjectedFaultError', code: 'injected_fault', fault: 'dependency', message: 'injected store failure' });
    expect(CairnError.isInstance(fault)).toBe(true);
  });
});

describe('serializeError of what is not a Cairn error', () => {
  const cases: Array<[string, unknown]> = [
    ['an Error', new Error('upstream timeout')],
    ['an Error with a code of its own', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
    ['a TypeError of the platform', new TypeError('fetch failed')],
    ['an Error whose code is not a string', Object.assign(new Error('x'), { code: 42 })],
    ['a plain object', { message: 'quota exceeded', code: 'QUOTA' }],
    ['an object whose getters throw', Object.defineProperty({}, 'message', { get() { throw new Error('no'); } })],
    ['a string', 'just a string'],
    ['a number', 7],
    ['undefined', undefined],
    ['null', null],
    ['an object with no toString', Object.create(null)],
  ];

  it.each(cases)('%s gets a code from the list: the one its caller names, internal by default', (_label, thrown) => {
    const plain = serializeError(thrown);
    expect(CAIRN_ERROR_CODES).toContain(plain.code);
    expect(plain.code).toBe('internal');
    expect(serializeError(thrown, 'tool_failed').code).toBe('tool_failed');
    expect(serializeError(thrown, 'callback_failed').code).toBe('callback_failed');
    expect(Object.keys(plain).sort()).toEqual(['code', 'message', 'name']);
  });

  it("keeps the error's own name and its message, redacted", () => {
    class QuotaError extends Error {
      override name = 'QuotaError';
    }
    expect(serializeError(new QuotaError('over quota for key sk-live-0123456789abcdef'), 'tool_failed')).toEqual({
      name: 'QuotaError', code: 'tool_failed', message: 'over quota for key [redacted]',
    });
    expect(serializeError({ message: 'quota exceeded' }, 'callback_failed')).toEqual({
      name: 'Error', code: 'callback_failed', message: 'quota exceeded',
    });
  });

  it('changes nothing in an error that is serialized already', () => {
    const once = serializeError(new RunIdentityError('run_not_found', 'r-1'));
    expect(serializeError(once, 'tool_failed')).toEqual(once);
    const withDetails = { name: 'BindingChangedError', code: 'binding_changed', message: 'Native agent binding changed across resume.', details: ['the model'] };
    expect(serializeError(withDetails)).toEqual(withDetails);
  });
});
