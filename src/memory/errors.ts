/** The memory layer's typed errors. */
import { CairnError } from '../errors/index.js';

export type MemoryErrorCode = 'memory_scope_invalid' | 'memory_record_invalid' | 'memory_llm_invalid' | 'memory_extraction_partial';

/**
 * A memory scope or record that is not what the store takes, a memory LLM
 * answer the extraction cannot use, or an extraction that was only partly
 * applied. Nothing was written by the call that threw it.
 */
export class MemoryError extends CairnError {
  constructor(code: MemoryErrorCode, message: string) {
    super(code, message, { fault: code === 'memory_llm_invalid' ? 'model' : code === 'memory_extraction_partial' ? 'dependency' : 'user' });
    this.name = 'MemoryError';
  }
}
