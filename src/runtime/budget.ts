/**
 * Budget admission of one run leg: every potentially billable model attempt
 * reserves its estimate in the execution context's ledger before it is sent;
 * the attempt's outcome settles the reservation (known usage), keeps it held
 * (the provider may have billed it) or gives it back (it did not).
 */
import { BudgetError } from '../errors/index.js';
import type { ExecutionContext } from '../policy/index.js';
import type { AdmitResult, Amounts, LedgerEntry } from '../policy/index.js';
import type { LanguageModel, ModelRequest, Usage } from '../models/types.js';
import { modelKey } from '../models/resolve.js';

/** Thrown before an attempt the ledger refused: the run stops with `budget-exceeded`. */
export class BudgetRefusal extends Error {
  constructor(readonly details: Extract<AdmitResult, { admitted: false }> & { model: string }) {
    super(`The budget of ${details.scope} refused a model call.`);
  }
}

/** USD of some usage at a price, or null without one. */
export function usdOf(context: ExecutionContext, model: { provider: string; modelId: string }, usage: { inputTokens: number; outputTokens: number }): number | null {
  const price = context.priceOf(model);
  if (!price) return null;
  return (usage.inputTokens * price.input + usage.outputTokens * price.output) / 1_000_000;
}

/** How much of a failed attempt the provider may have billed: `release` for an answer it does not bill (a 4xx such as 429). */
export function holdAfter(error: unknown): 'unknown' | 'released' {
  const e = error as { statusCode?: unknown; status?: unknown } | null;
  const status = typeof e?.statusCode === 'number' ? e.statusCode : typeof e?.status === 'number' ? e.status : null;
  // A 4xx other than a request timeout is refused before any work is billed; 5xx, 529, network errors and timeouts may have been.
  if (status !== null && status >= 400 && status < 500 && status !== 408) return 'released';
  return 'unknown';
}

const round = (n: number) => Math.round(n * 1e9) / 1e9;

export class RunBudget {
  private count = 0;
  /** Reservations of this leg not yet settled. */
  private readonly open = new Set<string>();

  constructor(
    readonly context: ExecutionContext,
    private readonly runId: string,
    /** Distinguishes this leg's reservations from an earlier leg's (after a crash, both may be in the ledger). */
    private readonly legId: string,
    private readonly now: () => number,
  ) {}

  /** Reserves one attempt's estimate; rejects with a {@link BudgetRefusal} when a ceiling would pass. */
  async admit(model: LanguageModel, request: ModelRequest, step: number, maxOutputTokens: number | undefined): Promise<string> {
    const key = modelKey(model);
    const estimate = this.context.estimate({
      model: key,
      requestChars: JSON.stringify(request.messages).length + JSON.stringify(request.tools ?? []).length,
      maxOutputTokens,
    });
    const usd = usdOf(this.context, model, estimate);
    const ceilings = this.context.policy.ceilings;
    if (usd === null && this.context.budget.unknownPrice === 'reject' && ceilings.some((c) => c.usd !== undefined)) {
      throw new BudgetError('unpriced_model', `The execution context has no price for ${key}, and its USD budget rejects unpriced models.`);
    }
    this.count += 1;
    const id = `${this.runId}:${step}:${this.legId}:${this.count}`;
    const result = await this.context.ledger.admit({
      id, scope: this.context.path, runId: this.runId, model: key, usd: usd === null ? null : round(usd),
      tokens: estimate.inputTokens + estimate.outputTokens, ceilings: [...ceilings], at: this.now(),
    });
    if (!result.admitted) throw new BudgetRefusal({ ...result, model: key });
    this.open.add(id);
    return id;
  }

  /** The attempt answered: its reservation becomes what it used. */
  async settle(id: string, model: LanguageModel, usage: Usage): Promise<void> {
    this.open.delete(id);
    const usd = usdOf(this.context, model, usage);
    await this.context.ledger.settle(id, { status: 'committed', usd: usd === null ? null : round(usd), tokens: usage.inputTokens + usage.outputTokens });
  }

  /** The attempt failed: its hold stays when the provider may have billed it, and is given back when it did not. */
  async fail(id: string, error: unknown): Promise<void> {
    this.open.delete(id);
    await this.context.ledger.settle(id, { status: holdAfter(error) });
  }

  /** Reservations this leg left open (a leg that ended mid-call): held as unknown. */
  async close(): Promise<void> {
    for (const id of [...this.open]) await this.fail(id, null).catch(() => undefined);
  }
}

export type { Amounts, LedgerEntry };
