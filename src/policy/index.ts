/**
 * cairn/policy: execution contexts (allowlists, approvals, depth, deadline)
 * and the budget ledger their runs spend from. See docs/policy.md.
 */
export { createExecutionContext, isExecutionContext, DEFAULT_ESTIMATED_OUTPUT_TOKENS } from './context.js';
export type { ExecutionContext, ExecutionPolicy } from './context.js';
export { createInMemoryLedger, decideAdmission, totalsOf } from './ledger.js';
export type {
  AdmitRequest, AdmitResult, Amounts, BudgetLedger, BudgetOptions, Ceiling, ChildContextOptions, EntryStatus, EstimateInput,
  ExecutionContextOptions, LedgerEntry, LedgerTotals, ModelPrice, PriceTable, RequireApproval, SettleOutcome, UsageEstimate,
} from './types.js';
export { ExecutionPolicyError, BudgetError, InvalidOptionsError } from '../errors/index.js';
