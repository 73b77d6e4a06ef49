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
import { roundUsd } from '../policy/ledger.js';
import { usdAt, type PricedUsage } from '../policy/prices.js';

/** Thrown before an attempt the ledger refused: the run stops with `budget-exceeded`. */
export class BudgetRefusal extends Error {
  constructor(readonly details: Extract<AdmitResult, { admitted: false }> & { model: string }) {
    super(`The budget of ${details.scope} refused a model call.`);
  }
}

/** USD of some usage at a price (cached input at its cache prices), or null without one. */
export function usdOf(context: ExecutionContext, model: { provider: string; modelId: string }, usage: PricedUsage): number | null {
  const price = context.priceOf(model);
  return price ? usdAt(price, usage) : null;
}

/** A run warning, as the host puts it on the stream and in `result.warnings`. */
export interface BudgetWarning {
  type: 'warning';
  setting: string;
  message: string;
}

/** UTF-8 bytes of a string, without Node's Buffer (a lone surrogate counts as the three bytes of its replacement). */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i += 1;
    } else bytes += 3;
  }
  return bytes;
}

/** The size of what a call sends: its messages and tools as JSON, in characters and in UTF-8 bytes. */
export function sizeOf(parts: readonly unknown[]): { chars: number; bytes: number } {
  let chars = 0;
  let bytes = 0;
  for (const part of parts) {
    const json = JSON.stringify(part ?? null);
    chars += json.length;
    bytes += utf8Bytes(json);
  }
  return { chars, bytes };
}

/** How much of a failed attempt the provider may have billed: `release` for an answer it does not bill (a 4xx such as 429). */
export function holdAfter(error: unknown): 'unknown' | 'released' {
  const e = error as { statusCode?: unknown; status?: unknown } | null;
  const status = typeof e?.statusCode === 'number' ? e.statusCode : typeof e?.status === 'number' ? e.status : null;
  // A 4xx other than a request timeout is refused before any work is billed; 5xx, 529, network errors and timeouts may have been.
  if (status !== null && status >= 400 && status < 500 && status !== 408) return 'released';
  return 'unknown';
}

const round = roundUsd;

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
    /**
     * Saves the run's record with the ledger as it is now. Called before an
     * attempt whose reservation no earlier save carried, when the ledger keeps
     * nothing beyond this process: the reservation is then in the record
     * before the call is sent, and a crash after it cannot lose the hold.
     */
    private readonly persist: (() => Promise<void>) | null = null,
    /** Puts a warning on the run's stream (an unpriced model held under a USD ceiling). */
    private readonly warn: ((warning: BudgetWarning) => void) | null = null,
  ) {}

  /** Models this leg already warned about. */
  private readonly warned = new Set<string>();

  /**
   * The reservation made for a step's first attempt by the save that precedes
   * it, so that it is durable before the call without a save of its own.
   */
  private pre: { step: number; model: string; id: string } | null = null;

  /**
   * Reserves the next call of `step` ahead, while the save that precedes it is
   * being written. Best effort: a refusal reserves nothing, and the call's own
   * admission then refuses it. `sent` is what the call will send (its
   * messages and its tools' schemas), measured as {@link sizeOf} does.
   */
  async reserveAhead(model: LanguageModel, step: number, sent: readonly unknown[], maxOutputTokens: number | undefined): Promise<void> {
    if (this.pre?.step === step && this.pre.model === modelKey(model)) return;
    await this.releaseAhead();
    try {
      const id = await this.reserve(model, step, sizeOf(sent), maxOutputTokens, 'ahead');
      this.pre = { step, model: modelKey(model), id };
    } catch {
      this.pre = null;
    }
  }

  /** A reservation made ahead that no call took: never dispatched, so given back. */
  async releaseAhead(): Promise<void> {
    const pre = this.pre;
    this.pre = null;
    if (!pre) return;
    this.open.delete(pre.id);
    await this.context.ledger.settle(pre.id, { status: 'released' });
  }

  /** Reserves one attempt's estimate; rejects with a {@link BudgetRefusal} when a ceiling would pass. */
  async admit(model: LanguageModel, request: ModelRequest, step: number, maxOutputTokens: number | undefined): Promise<string> {
    const pre = this.pre;
    if (pre && pre.step === step && pre.model === modelKey(model)) {
      this.pre = null;
      return pre.id;
    }
    await this.releaseAhead();
    const id = await this.reserve(model, step, sizeOf([request.messages, request.tools ?? []]), maxOutputTokens, String(++this.count));
    if (this.persist && this.context.ledger.durable !== true) {
      try {
        await this.persist();
      } catch (error) {
        // Not saved, so not sent: the reservation is given back and the run fails on the store's error.
        this.open.delete(id);
        await this.context.ledger.settle(id, { status: 'released' }).catch(() => undefined);
        throw error;
      }
    }
    return id;
  }

  private async reserve(
    model: LanguageModel, step: number, size: { chars: number; bytes: number }, maxOutputTokens: number | undefined, tag: string,
  ): Promise<string> {
    const key = modelKey(model);
    const estimate = this.context.estimate({ model: key, requestChars: size.chars, requestBytes: size.bytes, maxOutputTokens });
    const usd = usdOf(this.context, model, estimate);
    const ceilings = this.context.policy.ceilings;
    const usdCeiling = [...ceilings].reverse().find((c) => c.usd !== undefined);
    if (usd === null && usdCeiling) {
      // Fails closed: a ceiling that cannot count a call never lets it through unless the context opted into holding it.
      if ((this.context.budget.unknownPrice ?? 'reject') === 'reject') {
        throw new BudgetError(
          'unpriced_model',
          `The execution context has no price for ${key}, so its USD budget (${usdCeiling.scope}) cannot count the call; `
          + `price it with the context's prices, or set budget.unknownPrice: 'hold' to let it run uncounted.`,
        );
      }
      this.warnUnpriced(key, usdCeiling.scope);
    }
    const id = `${this.runId}:${step}:${this.legId}:${tag}`;
    const result = await this.context.ledger.admit({
      id, scope: this.context.path, runId: this.runId, model: key, usd: usd === null ? null : round(usd),
      tokens: estimate.inputTokens + estimate.outputTokens, ceilings: [...ceilings], at: this.now(),
    });
    if (!result.admitted) throw new BudgetRefusal({ ...result, model: key });
    this.open.add(id);
    return id;
  }

  /** Once per model and leg: the hold the context opted into is said on the stream. */
  private warnUnpriced(key: string, scope: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.warn?.({
      type: 'warning',
      setting: 'execution',
      message: `The execution context has no price for ${key}: its calls are held as unknown, and the USD budget of ${scope} `
        + `does not count them (budget.unknownPrice: 'hold'; a token ceiling still does).`,
    });
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

  /** At the end of the leg: a reservation made ahead that no call took is given back; any other left open is held as unknown. */
  async close(): Promise<void> {
    await this.releaseAhead().catch(() => undefined);
    for (const id of [...this.open]) await this.fail(id, null).catch(() => undefined);
  }

  /**
   * At the start of a resume: reservations of this run that an earlier leg
   * left `reserved` (it stopped while they were in flight, or before it
   * settled them) may have been billed, so they stay held as unknown.
   */
  async holdLeftovers(): Promise<void> {
    for (const entry of await this.context.ledger.entries(this.context.path)) {
      if (entry.runId === this.runId && entry.status === 'reserved' && !this.open.has(entry.id)) {
        await this.context.ledger.settle(entry.id, { status: 'unknown' });
      }
    }
  }
}

export type { Amounts, LedgerEntry };
