/**
 * cairn/policy: execution contexts (allowlists, approvals, depth, deadline)
 * and the budget ledger their runs spend from. See docs/policy.md.
 */
export { createExecutionContext, isExecutionContext, DEFAULT_ESTIMATED_OUTPUT_TOKENS } from './context.js';
export type { ExecutionContext, ExecutionPolicy } from './context.js';
export { createInMemoryLedger, decideAdmission, totalsOf } from './ledger.js';
export { BUNDLED_PRICES, PRICES_AS_OF, bundledPrice, usdAt } from './prices.js';
export type { ListedPrice, PricedUsage } from './prices.js';
export type {
  AdmitRequest, AdmitResult, Amounts, BudgetLedger, BudgetOptions, Ceiling, ChildContextOptions, EntryStatus, EstimateInput, EstimateRequest,
  ExecutionContextOptions, LedgerEntry, LedgerTotals, ModelPrice, PriceTable, RequireApproval, SettleOutcome, UsageEstimate,
} from './types.js';
export { ExecutionPolicyError, BudgetError, InvalidOptionsError } from '../errors/index.js';
