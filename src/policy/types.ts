/**
 * Public types of `cairn/policy`: the options of an execution context, its
 * ledger's entries and the ledger contract a shared store implements.
 */

/** USD per million tokens of one model, and what one call of it can produce. */
export interface ModelPrice {
  input: number;
  output: number;
  /** Input tokens read from the provider's prompt cache. @default input */
  cacheRead?: number;
  /** Input tokens written to the prompt cache. @default input */
  cacheWrite?: number;
  /**
   * The most output tokens one call of the model can produce: what a call
   * that sets no maxOutputTokens is reserved at.
   * @default the bundled table's limit for the model, else DEFAULT_ESTIMATED_OUTPUT_TOKENS
   */
  maxOutputTokens?: number;
}

/** Prices by `provider:modelId` (or by bare `modelId`, which any provider's model of that id takes). */
export type PriceTable = Record<string, ModelPrice>;

/** What one model call is expected to use before it is made: the amount a reservation holds. */
export interface UsageEstimate {
  inputTokens: number;
  outputTokens: number;
}

/** What {@link EstimateInput} a caller of `context.estimate` gives; the context adds the rest. */
export interface EstimateRequest {
  /** `provider:modelId` of the model about to be called. */
  model: string;
  /** The characters (UTF-16 code units) of the request's messages and tools, as JSON. */
  requestChars: number;
  /** The UTF-8 bytes of the same JSON. @default requestChars */
  requestBytes?: number;
  /** The run's maxOutputTokens, when it set one. */
  maxOutputTokens: number | undefined;
}

/** What an estimate is made from. */
export interface EstimateInput extends EstimateRequest {
  requestBytes: number;
  /** The model's output limit (its price's `maxOutputTokens`), or null when the context knows none. */
  outputLimit: number | null;
}

export interface BudgetOptions {
  /** A ceiling in USD for everything admitted under this context (its children included). */
  usd?: number;
  /** A ceiling in tokens (input plus output) for everything admitted under this context. */
  tokens?: number;
  /**
   * How a model call is estimated before it is admitted. A function, or fixed
   * token counts.
   * @default input: one token per UTF-8 byte of the request's messages and tools as JSON;
   * output: maxOutputTokens, else the model's output limit, else 1024
   */
  estimate?: Partial<UsageEstimate> | ((input: EstimateInput) => UsageEstimate);
  /**
   * A model without a price under a USD ceiling: `'reject'` refuses its calls
   * before they are sent (BudgetError `unpriced_model`); `'hold'` admits them,
   * held as unknown (the USD ceiling cannot count them; a token ceiling still
   * does), and the run warns on its stream. @default 'reject'
   */
  unknownPrice?: 'hold' | 'reject';
}

/** Who must approve: every tool (`true`) or the tools named. */
export type RequireApproval = boolean | readonly string[];

export interface ExecutionContextOptions {
  /** A name for the context's scope in the ledger. @default 'root' */
  name?: string;
  /** Models a run may call, as `provider:modelId`, a bare `modelId`, or `provider:*`. @default every model */
  allowedModels?: readonly string[];
  /** Tools a run may call, by name. @default every tool */
  allowedTools?: readonly string[];
  /** Tool calls held for a human verdict whatever the tool's own needsApproval says. @default false */
  requireApproval?: RequireApproval;
  /** How many `.child()` levels below this context may exist. @default unlimited */
  maxDepth?: number;
  /** Absolute time (ms since epoch, on the run's clock) after which no model call or effect starts. */
  deadline?: number;
  budget?: BudgetOptions;
  /** USD per million tokens, by model: each entry overrides the bundled table's price of its model. */
  prices?: PriceTable;
  /**
   * Models `prices` does not list take the bundled table's price
   * (`BUNDLED_PRICES`, see docs/policy.md). `false`: only `prices` price anything. @default true
   */
  bundledPrices?: boolean;
  /**
   * Where the reservations live. @default an in-memory ledger of this context
   * Pass `ops.budgets.ledger(name)` of an ops store to share one ledger between processes.
   */
  ledger?: BudgetLedger;
  /** The clock the deadline and the ledger's timestamps read. @default Date.now */
  clock?: { now(): number };
}

/** What a child may set: each only narrows what its parent allows. */
export type ChildContextOptions = Omit<ExecutionContextOptions, 'ledger' | 'prices' | 'bundledPrices' | 'clock' | 'budget'> & {
  budget?: Omit<BudgetOptions, 'estimate'>;
};

export type EntryStatus = 'reserved' | 'committed' | 'unknown' | 'released';

/** One reservation of a ledger: what one model attempt was admitted with, and what it came to. */
export interface LedgerEntry {
  id: string;
  /** The path of the context it was charged to (`root`, `root/research`, ...). */
  scope: string;
  runId: string | null;
  /** `provider:modelId`. */
  model: string;
  status: EntryStatus;
  /** The estimate it was admitted with (usd null: the model has no price). */
  estimate: { usd: number | null; tokens: number };
  /** What it counts now: the estimate while reserved or unknown, the known usage once committed, 0 once released. */
  usd: number | null;
  tokens: number;
  /** Ledger time of its admission (ms). */
  at: number;
}

/** A ceiling of one context on the path of a reservation. */
export interface Ceiling {
  scope: string;
  usd?: number;
  tokens?: number;
}

export interface AdmitRequest {
  id: string;
  scope: string;
  runId: string | null;
  model: string;
  usd: number | null;
  tokens: number;
  /** Every ceiling on the context's path, root first: each must still hold with this reservation added. */
  ceilings: Ceiling[];
  at: number;
}

export interface Amounts {
  usd: number;
  tokens: number;
}

export type AdmitResult =
  | { admitted: true; entry: LedgerEntry }
  | {
    admitted: false;
    /** The context whose ceiling refused it, with that ceiling. */
    scope: string;
    ceiling: { usd?: number; tokens?: number };
    /** Under that context: committed so far, held (reserved and unknown), and what this admission asked for. */
    spent: Amounts;
    held: Amounts;
    asked: Amounts;
  };

export type SettleOutcome =
  /** Usage is known: the reservation becomes what the call used (usd null: no price). */
  | { status: 'committed'; usd: number | null; tokens: number }
  /** The provider may have billed it: the estimate stays held. */
  | { status: 'unknown' }
  /** Nothing was billed (a 429): the hold is given back. */
  | { status: 'released' };

/**
 * Where the reservations of one ledger live. Admission is atomic: two
 * concurrent admissions can never together pass a ceiling. An admission under
 * an id the ledger holds already answers with that entry (a replay never
 * reserves twice).
 */
export interface BudgetLedger {
  /** A name for the ledger (the shared stores' ledger name). */
  readonly name: string;
  /**
   * True when the ledger's entries outlive the process that admitted them (the
   * SQLite and PostgreSQL stores' ledgers). A ledger that is not durable (the
   * in-memory one) lives on only in the records of the runs that use it, so a
   * run saves each reservation in its record before the call it holds is sent.
   */
  readonly durable?: boolean;
  admit(request: AdmitRequest): Promise<AdmitResult>;
  /** Settles an open (reserved or unknown) entry; a settled entry stays as it is. */
  settle(id: string, outcome: SettleOutcome): Promise<void>;
  /** Entries charged to `scope` or below it (every entry without one). */
  entries(scope?: string): Promise<LedgerEntry[]>;
  /** Adds the entries it does not hold yet (a checkpoint restored into a fresh ledger); held entries stay as they are. */
  restore(entries: readonly LedgerEntry[]): Promise<void>;
}

/** Totals of a ledger under one scope. */
export interface LedgerTotals {
  /** Known usage of settled entries. */
  committed: Amounts;
  /** Estimates of admitted calls still in flight. */
  reserved: Amounts;
  /** Holds whose outcome stayed uncertain, and calls of unpriced models (their tokens; no USD). */
  unknown: Amounts;
}
