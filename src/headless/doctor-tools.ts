/**
 * The doctor's checks of what the model is offered: tools, skills, the
 * structured output and toolChoice.
 */
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { checkJsonSchema, isStandardSchemaValue } from './doctor-schema.js';
import type { Findings } from './doctor-codes.js';

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const DEFAULT_OUTPUT_TOOL = 'json_output';
// The skill tools' names. They are part of the spec's contract, so they are
// spelled out here rather than imported from the skills module.
const SKILL_TOOLS = ['load_skill', 'read_skill_resource'];

export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
export const show = (v: unknown): string => {
  if (typeof v === 'function') return 'a function';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  try {
    const text = JSON.stringify(v);
    return text === undefined ? String(v) : text.length > 60 ? `${text.slice(0, 60)}…` : text;
  } catch {
    return Object.prototype.toString.call(v);
  }
};
const at = (base: string, name: string) => (TOOL_NAME.test(name) ? `${base}.${name}` : `${base}[${JSON.stringify(name)}]`);
const below = (base: string, rest: string) => (rest === '' ? base : rest.startsWith('[') ? `${base}${rest}` : `${base}.${rest}`);

/** The skills option holds at least one source. */
export function hasSkills(skills: unknown): boolean {
  return skills !== undefined && skills !== null && !(Array.isArray(skills) && skills.length === 0);
}

/** Checks `tools`; returns the names of the tools that will exist (valid or not). */
export function checkTools(tools: unknown, skills: boolean, out: Findings): string[] {
  if (tools === undefined) return [];
  if (!isRecord(tools)) {
    out.add('tools-invalid', `tools must be an object mapping each tool name to its definition, got ${show(tools)}.`, 'tools');
    return [];
  }
  for (const [name, tool] of Object.entries(tools)) {
    const path = at('tools', name);
    if (!TOOL_NAME.test(name)) {
      out.add('tool-name-invalid', `Rename tool ${JSON.stringify(name)}: a name is 1 to 64 letters, digits, "_" or "-" (providers refuse others).`, path);
    }
    if (skills && SKILL_TOOLS.includes(name)) {
      out.add('skill-tool-collision', `Rename tool "${name}": with skills, the run adds its own "${name}" tool.`, path);
    }
    if (!isRecord(tool)) {
      out.add('tool-invalid', `Tool ${JSON.stringify(name)} must be an object with parameters (and execute for a server tool), got ${show(tool)}.`, path);
      continue;
    }
    if (tool.description !== undefined && typeof tool.description !== 'string') {
      out.add('tool-invalid', `Make the description of tool "${name}" a string.`, `${path}.description`);
    }
    if (tool.parameters === undefined) {
      out.add('tool-schema-invalid', `Give tool "${name}" parameters: a JSON Schema such as { type: 'object', properties: {} }.`, `${path}.parameters`);
    } else {
      for (const problem of checkJsonSchema(tool.parameters, { objectRoot: true })) {
        out.add('tool-schema-invalid', `Fix the parameters of tool "${name}": ${problem.message}.`, below(`${path}.parameters`, problem.at));
      }
    }
    if (tool.execute !== undefined && typeof tool.execute !== 'function') {
      out.add('tool-execute-invalid', `Make execute of tool "${name}" a function, or leave it out for a client tool.`, `${path}.execute`);
    }
    if (tool.needsApproval !== undefined && typeof tool.needsApproval !== 'boolean' && typeof tool.needsApproval !== 'function') {
      out.add('tool-needs-approval-invalid', `Make needsApproval of tool "${name}" true, false or a function of the call, got ${show(tool.needsApproval)}.`, `${path}.needsApproval`);
    }
    if (tool.replay !== undefined && tool.replay !== 'idempotent' && tool.replay !== 'never') {
      out.add('tool-replay-invalid', `Set replay of tool "${name}" to 'idempotent' or 'never', got ${show(tool.replay)}.`, `${path}.replay`);
    }
    for (const [schemaKey, validatorKey] of [['outputSchema', 'validateResult'], ['contextSchema', 'validateContext']] as const) {
      const schema = tool[schemaKey];
      if (schema === undefined || isStandardSchemaValue(schema)) continue;
      if (typeof tool[validatorKey] !== 'function') {
        out.add('tool-validator-missing', `Tool "${name}" has a JSON Schema ${schemaKey}, which only describes: add ${validatorKey}, or pass a Standard Schema value.`, `${path}.${schemaKey}`);
      }
    }
  }
  return Object.keys(tools);
}

const isSkillSource = (v: unknown): boolean =>
  isRecord(v) && typeof v.list === 'function' && typeof v.load === 'function' && typeof v.readResource === 'function';

/**
 * Checks the shape of `skills`, and that each directory path is a directory.
 * A SkillSource's `list()` is not called: a source may be remote, and the doctor makes no network call.
 */
export async function checkSkills(skills: unknown, out: Findings): Promise<void> {
  if (skills === undefined) return;
  const entries = Array.isArray(skills) ? skills.map((s, i) => [s, `skills[${i}]`] as const) : [[skills, 'skills'] as const];
  for (const [entry, path] of entries) {
    if (typeof entry === 'string' && entry.trim() !== '') {
      const dir = resolve(entry);
      const isDir = await stat(dir).then((s) => s.isDirectory(), () => false);
      if (!isDir) out.add('skills-dir-missing', `Skills directory ${JSON.stringify(entry)} (${dir}) is not a directory: create it or fix the path.`, path);
    } else if (!isSkillSource(entry)) {
      out.add('skills-invalid', `Each skills entry must be a directory path or a skill source with list, load and readResource, got ${show(entry)}.`, path);
    }
  }
}

/** Checks `output`; returns the name of the output tool when output uses tool mode. */
export function checkOutput(output: unknown, toolNames: string[], skills: boolean, out: Findings): string | undefined {
  if (output === undefined) return undefined;
  if (!isRecord(output)) {
    out.add('output-invalid', `output must be an object such as { schema, validate }, got ${show(output)}.`, 'output');
    return undefined;
  }
  const mode = output.mode ?? 'json';
  if (mode !== 'json' && mode !== 'tool') {
    out.add('output-mode-invalid', `Set output.mode to 'json' (answer in JSON) or 'tool' (a forced output tool), got ${show(output.mode)}.`, 'output.mode');
  }
  if (output.schema === undefined) {
    out.add('output-schema-missing', 'Give output a schema: a Standard Schema value (zod, valibot, ...) or a JSON Schema with output.validate.', 'output.schema');
  } else if (!isStandardSchemaValue(output.schema)) {
    if (typeof output.validate !== 'function') {
      out.add('output-validate-missing', 'A JSON Schema only describes the answer: add output.validate, or pass a Standard Schema value as output.schema.', 'output.validate');
    }
    for (const problem of checkJsonSchema(output.schema, { objectRoot: mode === 'tool' })) {
      out.add('output-schema-invalid', `Fix output.schema: ${problem.message}.`, below('output.schema', problem.at));
    }
  }
  if (mode !== 'tool') return undefined;
  const name = output.name ?? DEFAULT_OUTPUT_TOOL;
  if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
    out.add('output-name-invalid', `Set output.name to 1 to 64 letters, digits, "_" or "-", got ${show(name)}.`, 'output.name');
    return undefined;
  }
  if (toolNames.includes(name)) {
    out.add('output-name-collision', `The output tool "${name}" has the name of one of your tools: set output.name to another name.`, 'output.name');
  }
  if (skills && SKILL_TOOLS.includes(name)) {
    out.add('skill-tool-collision', `Set output.name to another name: with skills, the run adds its own "${name}" tool.`, 'output.name');
  }
  return name;
}

/** Checks `toolChoice` against the tools the run will offer. */
export function checkToolChoice(choice: unknown, toolNames: string[], skills: boolean, out: Findings): void {
  if (choice === undefined) return;
  const offered = [...toolNames, ...(skills ? SKILL_TOOLS : [])];
  if (choice === 'auto' || choice === 'none') return;
  if (choice === 'required') {
    if (offered.length === 0) out.add('tool-choice-no-tools', "toolChoice 'required' needs at least one tool: add tools, or use 'auto'.", 'toolChoice');
    return;
  }
  if (isRecord(choice) && typeof choice.toolName === 'string') {
    if (!offered.includes(choice.toolName)) {
      const known = offered.length ? `: one of ${offered.map((n) => `"${n}"`).join(', ')}` : '; the run has none';
      out.add('tool-choice-unknown-tool', `toolChoice names "${choice.toolName}", which is not a tool of the run. Name a tool it has${known}.`, 'toolChoice.toolName');
    }
    return;
  }
  out.add('option-invalid', `Set toolChoice to 'auto', 'none', 'required' or { toolName }, got ${show(choice)}.`, 'toolChoice');
}
