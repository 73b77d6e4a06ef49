/** The memory layer's typed errors. */
import { CairnError } from '../errors/index.js';

export type MemoryErrorCode =
  | 'memory_scope_invalid' | 'memory_record_invalid' | 'memory_llm_invalid' | 'memory_extraction_partial'
  // Versioned memory (cairn/memory/versioned):
  | 'memory_record_not_found' | 'memory_record_exists' | 'memory_record_retracted' | 'memory_record_forgotten'
  | 'memory_revision_unknown' | 'memory_receipt_mismatch' | 'memory_source_unknown' | 'memory_forget_listener_failed';

/**
 * A memory scope or record that is not what the store takes, a memory LLM
 * answer the extraction cannot use, or an extraction that was only partly
 * applied. Nothing was written by the call that threw it.
 */
export class MemoryError extends CairnError {
  constructor(code: MemoryErrorCode, message: string) {
    super(code, message, { fault: code === 'memory_llm_invalid' || code === 'memory_source_unknown' ? 'model' : code === 'memory_extraction_partial' || code === 'memory_forget_listener_failed' ? 'dependency' : 'user' });
    this.name = 'MemoryError';
  }
}
