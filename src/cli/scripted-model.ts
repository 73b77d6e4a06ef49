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
import { CairnError } from '../errors/index.js';
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

/** The keys each object of a model file may have (MockTurn of cairn/testing and its parts). */
const KEYS = {
  file: ['modelId', 'turns'],
  turn: ['text', 'toolCalls', 'finishReason', 'usage', 'error', 'chunks', 'reasoning', 'delayMs', 'streamError'],
  toolCall: ['toolName', 'args', 'toolCallId'],
  usage: ['inputTokens', 'outputTokens', 'totalTokens', 'cacheReadTokens', 'cacheWriteTokens', 'reasoningTokens'],
  statusError: ['status', 'message', 'retryAfterMs'],
  streamError: ['afterChunks', 'error'],
  reasoning: ['type', 'text', 'providerMetadata'],
} as const;

/** Edit distance, for the key a typo most likely meant. */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Refuses a key the object does not take, naming it, where it is, and the
 * known key it most likely meant: a typo (`txt`) would otherwise be a turn
 * with empty text that runs without a word of warning.
 */
function checkKeys(path: string, where: string, value: unknown, known: readonly string[]): void {
  if (!isObject(value)) return;
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    const near = known.map((k) => [k, distance(key.toLowerCase(), k.toLowerCase())] as const).sort((x, y) => x[1] - y[1])[0];
    const hint = near && near[1] <= Math.max(2, Math.floor(near[0].length / 3)) ? ` (did you mean "${near[0]}"?)` : '';
    throw new UsageError(`--model ${path}: ${where} has an unknown key "${key}"${hint}; it takes ${known.map((k) => `"${k}"`).join(', ')}.`);
  }
}

function checkFileKeys(path: string, script: Record<string, unknown>): void {
  checkKeys(path, 'the file', script, KEYS.file);
  (script.turns as unknown[]).forEach((turn, i) => {
    const where = `turn ${i + 1}`;
    checkKeys(path, where, turn, KEYS.turn);
    if (!isObject(turn)) return;
    if (Array.isArray(turn.toolCalls)) turn.toolCalls.forEach((call, j) => checkKeys(path, `${where}, tool call ${j + 1}`, call, KEYS.toolCall));
    checkKeys(path, `${where}, usage`, turn.usage, KEYS.usage);
    if (Array.isArray(turn.reasoning)) turn.reasoning.forEach((part, j) => checkKeys(path, `${where}, reasoning ${j + 1}`, part, KEYS.reasoning));
    // A file's error is a plain { status, message?, retryAfterMs? }: JSON has no Error.
    if (isObject(turn.error) && 'status' in turn.error) checkKeys(path, `${where}, error`, turn.error, KEYS.statusError);
    checkKeys(path, `${where}, streamError`, turn.streamError, KEYS.streamError);
    if (isObject(turn.streamError) && isObject(turn.streamError.error) && 'status' in turn.streamError.error) {
      checkKeys(path, `${where}, streamError.error`, turn.streamError.error, KEYS.statusError);
    }
  });
}

/** Reads and checks a model file; every problem is a UsageError naming the file. */
export function loadModelFile(path: string, cwd: string): { path: string; script: ScriptedModelFile } {
  const abs = resolve(cwd, path);
  let text: string;
  try {
    if (!statSync(abs).isFile()) throw new UsageError('not a file'); // caught below: reported as no such file
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
  checkFileKeys(path, script as Record<string, unknown>);
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
      const message = `${name} has ${turns.length} turn(s) and the run asked for turn ${n + 1}; add turns to the script.`;
      return { error: new CairnError('mock_model_unexpected_call', message, { fault: 'user' }) };
    }
    // Ids by the run's turn number, so they stay the same in whichever process asks.
    if (!turn.toolCalls) return turn;
    return { ...turn, toolCalls: turn.toolCalls.map((c, i) => ({ ...c, toolCallId: c.toolCallId ?? `call_${n + 1}_${i + 1}` })) };
  };
  return createMockModel({ modelId: script.modelId ?? DEFAULT_SCRIPTED_MODEL_ID, strict: false, responses: [turnFor] });
}
