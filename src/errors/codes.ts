/**
 * The closed list of Cairn's error codes. docs/errors.md documents each one
 * (a test checks that it does).
 */
/**
 * Every code a Cairn error, or the `error` of a result, a receipt or an event,
 * can carry: the closed union {@link CairnErrorCode} is derived from this list,
 * so the two cannot drift apart. docs/errors.md says what each one means and
 * whose move it is.
 */
export const CAIRN_ERROR_CODES = [
  'revision_conflict',
  'checkpoint_version_unsupported',
  'binding_changed',
  'run_not_found',
  'scope_mismatch',
  'run_busy',
  'lease_held',
  'lease_lost',
  'record_corrupt',
  'record_version_unsupported',
  'unsupported_store',
  'persistence_failed',
  'store_unreachable',
  'model_call_failed',
  'api_call_failed',
  'api_key_missing',
  'api_key_invalid',
  'invalid_response',
  'transport_timeout',
  'mock_model_unexpected_call',
  'tool_not_allowed',
  'model_not_allowed',
  'policy_widened',
  'max_depth_exceeded',
  'execution_context_mismatch',
  'deadline_exceeded',
  'invalid_options',
  'invalid_envelope',
  'tool_context_invalid',
  'result_too_large',
  'result_unstorable',
  'budget_exceeded',
  'unpriced_model',
  'budget_admission_conflict',
  'breaker_open',
  'skill_access_denied',
  'unknown_effect',
  'reconciled_error',
  'tool_failed',
  'callback_failed',
  'journal_conflict',
  'journal_cursor_invalid',
  'journal_stream_not_found',
  'memory_scope_invalid',
  'memory_record_invalid',
  'memory_llm_invalid',
  'memory_extraction_partial',
  'chat_record_invalid',
  'job_payload_invalid',
  'job_agent_unknown',
  'queue_schema_unsupported',
  'session_id_invalid',
  'session_turn_invalid',
  'session_corrupt',
  'session_foreign',
  'session_conflict',
  'evidence_invalid',
  'evidence_rejected',
  'evidence_conflict',
  'tool_definition_invalid',
  'tool_name_duplicate',
  'agent_state_invalid',
  'agent_state_version_unsupported',
  'agent_state_tampered',
  'mcp_unavailable',
  'mcp_connect_failed',
  'mcp_protocol_error',
  'mcp_timeout',
  'mcp_tool_schema_invalid',
  'mcp_tool_name_duplicate',
  'mcp_tool_error',
  'mcp_output_invalid',
  'mcp_call_interrupted',
  'mcp_server_closed',
  'mcp_sampling_refused',
  'injected_fault',
  'internal',
] as const;

export type CairnErrorCode = (typeof CAIRN_ERROR_CODES)[number];

const CODES: ReadonlySet<string> = new Set(CAIRN_ERROR_CODES);

/** True when `value` is one of {@link CAIRN_ERROR_CODES}. */
export function isCairnErrorCode(value: unknown): value is CairnErrorCode {
  return typeof value === 'string' && CODES.has(value);
}
