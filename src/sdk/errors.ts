/**
 * The typed errors of the `cairn` root surface: a tool or agent that is not
 * well defined, and a state that cannot be continued. Each is thrown before
 * anything runs or is written.
 */
import { CairnError } from '../errors/index.js';

/**
 * A `tool({...})` or an Agent's `tools` that cannot be used: no name, a name
 * the wire does not allow, a `schema` that is not a validator, a validator
 * with no JSON Schema for the model, `execute` that is not a function, an
 * approval option of the wrong kind (`tool_definition_invalid`), or two tools
 * with one name (`tool_name_duplicate`).
 */
export class ToolDefinitionError extends CairnError {
  /** The tool's name, when it has one. */
  readonly toolName: string | undefined;

  constructor(code: 'tool_definition_invalid' | 'tool_name_duplicate', message: string, toolName?: string, cause?: unknown) {
    super(code, message, { fault: 'user', cause });
    this.name = 'ToolDefinitionError';
    this.toolName = toolName;
  }
}

/**
 * A state handed to `agent.run({ state })` that cannot be continued: not a
 * Cairn agent state or incomplete (`agent_state_invalid`), of a schema version
 * this reader does not know (`agent_state_version_unsupported`), or whose
 * digest does not match its content (`agent_state_tampered`). Nothing ran.
 */
export class AgentStateError extends CairnError {
  constructor(code: 'agent_state_invalid' | 'agent_state_version_unsupported' | 'agent_state_tampered', message: string) {
    super(code, message, { fault: 'user' });
    this.name = 'AgentStateError';
  }
}
