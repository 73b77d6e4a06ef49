/** The shape checks of reconcileAgentToolExecution: nothing is read before they pass. */
import { UnsupportedStoreError } from '../errors/index.js';
import { ToolEvidenceError } from './errors.js';
import type { ReconcileAgentToolExecutionOptions, ToolExecutionEvidence } from './types.js';

const STRINGS = ['operationId', 'runId', 'scope', 'toolCallId', 'toolName', 'inputDigest', 'source'] as const;
const DIGEST = /^sha256:[0-9a-f]{64}$/;

const isJson = (value: unknown, depth = 0): boolean => {
  if (depth > 64) return false;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every((v) => isJson(v, depth + 1));
  if (typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && Object.values(value).every((v) => v === undefined || isJson(v, depth + 1));
};

export function checkOptions(options: ReconcileAgentToolExecutionOptions): ToolExecutionEvidence {
  const invalid = (message: string, operationId?: string): never => {
    throw new ToolEvidenceError('invalid', message, operationId);
  };
  if (options === null || typeof options !== 'object') return invalid('reconcileAgentToolExecution needs { store, evidence, verifyEvidence }.');
  const store = options.store as unknown as Record<string, { [method: string]: unknown } | undefined> | undefined;
  if (!store || typeof store !== 'object') return invalid('reconcileAgentToolExecution needs a store.');
  const missing = [
    ['agentRuns', ['load', 'save']], ['leases', ['acquire', 'renew', 'release']], ['journal', ['read', 'append']],
  ].filter(([part, methods]) => !(methods as string[]).every((m) => typeof store[part as string]?.[m] === 'function')).map(([part]) => part as string);
  if (missing.length > 0) {
    // A run store alone cannot be fenced: there is no lease to keep an executor out, and no journal to decide in.
    throw new UnsupportedStoreError(
      typeof store.load === 'function' ? 'agent-run-store' : 'unknown',
      'tool-evidence-reconciliation',
      `reconcileAgentToolExecution needs a store with agentRuns, leases and journal (an ops store); this one has no ${missing.join(', ')}.`,
    );
  }
  if (typeof options.verifyEvidence !== 'function') return invalid('reconcileAgentToolExecution needs verifyEvidence: a function.');
  if (options.leaseTtlMs !== undefined && !(Number.isFinite(options.leaseTtlMs) && options.leaseTtlMs > 0)) return invalid('leaseTtlMs must be a number above 0.');
  const evidence = options.evidence as unknown as Record<string, unknown> | undefined;
  if (!evidence || typeof evidence !== 'object') return invalid('reconcileAgentToolExecution needs evidence.');
  const operationId = typeof evidence.operationId === 'string' ? evidence.operationId : undefined;
  for (const field of STRINGS) {
    if (typeof evidence[field] !== 'string' || evidence[field] === '') return invalid(`evidence.${field} must be a non-empty string.`, operationId);
  }
  if (!DIGEST.test(evidence.inputDigest as string)) return invalid('evidence.inputDigest must be sha256:<64 hex> of the arguments (digestOfToolInput).', operationId);
  if (!('output' in evidence) || evidence.output === undefined || !isJson(evidence.output)) return invalid('evidence.output must be plain JSON.', operationId);
  if (!('proof' in evidence) || evidence.proof === undefined || !isJson(evidence.proof)) return invalid('evidence.proof must be plain JSON.', operationId);
  if (evidence.isError !== undefined && typeof evidence.isError !== 'boolean') return invalid('evidence.isError must be a boolean when given.', operationId);
  return structuredClone(options.evidence);
}
