/**
 * What every conformance suite starts with: one describe block named
 * `<contract> conformance: <name>`, and a register function that gives each
 * case a fresh fixture from the initializer's `create()` and hands it to its
 * `destroy()` afterwards, whether the case passed or failed.
 */
import type { ConformanceTestApi } from './types.js';

/** The part of an initializer the preamble reads. Each suite's own initializer type has these fields and more. */
export interface CaseSource<F> {
  name: string;
  create(): Promise<F>;
  destroy?(fixture: F): Promise<void>;
}

/** Registers one case: a fresh fixture from `create`, destroyed afterwards whatever happened. */
export type CaseRegister<F> = (name: string, body: (fixture: F) => Promise<void>) => void;

/** A register function over `initializer`: each case it registers runs on a fixture of its own. */
export function freshFixtureCases<F>(initializer: CaseSource<F>, api: ConformanceTestApi): CaseRegister<F> {
  return (name, body) => {
    api.it(name, async () => {
      const fixture = await initializer.create();
      try {
        await body(fixture);
      } finally {
        await initializer.destroy?.(fixture);
      }
    });
  };
}

/**
 * Opens the suite's describe block, `${contract} conformance: ${initializer.name}`,
 * and runs `body` inside it with a register function from {@link freshFixtureCases}.
 */
export function describeConformance<F>(
  contract: string,
  initializer: CaseSource<F>,
  api: ConformanceTestApi,
  body: (register: CaseRegister<F>) => void,
): void {
  const register = freshFixtureCases(initializer, api);
  api.describe(`${contract} conformance: ${initializer.name}`, () => body(register));
}
