/**
 * The scripted model file `cairn run --model` takes: `{ "modelId"?, "turns": MockTurn[] }`.
 *
 * Turn N answers the Nth model call of the *run*, counted from the request
 * (the assistant turns already in the conversation), not from the calls this
 * process made: a fresh process that resumes the run goes on with the script
 * where the run is.
 */
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { LanguageModel, ModelRequest } from '../models/types.js';
import { createMockModel, type MockTurn } from '../testing/index.js';
import { UsageError } from './args.js';

export interface ScriptedModelFile {
  /** The model id the run's binding records; a resume must use the same. @default 'scripted' */
  modelId?: string;
  /** Turn N answers the Nth model call of the run. */
  turns: MockTurn[];
}

export const DEFAULT_SCRIPTED_MODEL_ID = 'scripted';

/** Reads and checks a model file; every problem is a UsageError naming the file. */
export function loadModelFile(path: string, cwd: string): { path: string; script: ScriptedModelFile } {
  const abs = resolve(cwd, path);
  let text: string;
  try {
    if (!statSync(abs).isFile()) throw new Error('not a file');
    text = readFileSync(abs, 'utf8');
  } catch {
    throw new UsageError(`--model ${path}: no such file (a scripted model file: { "turns": [...] }).`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--model ${path}: not valid JSON (${(error as Error).message}).`);
  }
  const script = data as Partial<ScriptedModelFile> | null;
  if (script === null || typeof script !== 'object' || Array.isArray(script) || !Array.isArray(script.turns)) {
    throw new UsageError(`--model ${path}: expected an object with a "turns" array.`);
  }
  if (script.modelId !== undefined && (typeof script.modelId !== 'string' || script.modelId === '')) {
    throw new UsageError(`--model ${path}: "modelId" must be a non-empty string.`);
  }
  try {
    // createMockModel checks every turn where it is written.
    createMockModel({ responses: script.turns, ...(script.modelId ? { modelId: script.modelId } : {}) });
  } catch (error) {
    throw new UsageError(`--model ${path}: ${(error as Error).message.replace(/^createMockModel: /, '')}`);
  }
  if (script.turns.length === 0) throw new UsageError(`--model ${path}: "turns" is empty; the run needs at least one turn.`);
  return { path: abs, script: script as ScriptedModelFile };
}

/** The model of a script: answers each call with the turn of the run's position. */
export function scriptedModel(script: ScriptedModelFile, name = 'the scripted model'): LanguageModel {
  const turns = script.turns;
  const turnFor = (request: ModelRequest): MockTurn => {
    const n = request.messages.filter((m) => m.role === 'assistant').length;
    const turn = turns[n];
    if (turn === undefined) {
      return { error: new Error(`${name} has ${turns.length} turn(s) and the run asked for turn ${n + 1}; add turns to the script.`) };
    }
    // Ids by the run's turn number, so they stay the same in whichever process asks.
    if (!turn.toolCalls) return turn;
    return { ...turn, toolCalls: turn.toolCalls.map((c, i) => ({ ...c, toolCallId: c.toolCallId ?? `call_${n + 1}_${i + 1}` })) };
  };
  return createMockModel({ modelId: script.modelId ?? DEFAULT_SCRIPTED_MODEL_ID, strict: false, responses: [turnFor] });
}
