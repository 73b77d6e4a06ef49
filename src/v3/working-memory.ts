/**
 * The working memory of a V3 run: a goal and a list of notes, kept in the
 * record (`workingMemory: { revision, snapshot, applied }`), sent as the
 * request's last message, and, with `tools: true`, edited by the model
 * through three tools. Each patch is keyed by its call's effect identity
 * ([modelStep, toolCallId]): a call that runs again after a crash finds its
 * key applied and answers what it answered the first time, so a patch is
 * applied once whether or not its receipt's save landed.
 */
import { InvalidOptionsError } from '../errors/index.js';
import type { AgentTool } from '../agent/tool-types.js';
import type { WorkingMemoryCreate, WorkingMemoryOptions, WorkingMemorySnapshot } from './run-types.js';

export const WORKING_MEMORY_TOOLS = ['working_memory_read', 'working_memory_add', 'working_memory_update'] as const;

/** The record's `workingMemory`: the snapshot, the patch count, and the calls whose patches it holds. */
export interface WorkingMemoryRecord {
  revision: number;
  snapshot: WorkingMemorySnapshot;
  /** `<modelStep>:<toolCallId>` of every applied patch, with the revision it made. */
  applied?: Record<string, number>;
}

function checkSnapshot(value: unknown, what: string): WorkingMemorySnapshot {
  const s = value as Partial<WorkingMemorySnapshot> | null;
  if (!s || typeof s !== 'object' || typeof s.scope !== 'string' || !Array.isArray(s.notes)
      || !(s.goal === null || typeof s.goal === 'string') || typeof s.createdAt !== 'number'
      || !s.notes.every((n) => n && typeof n.id === 'string' && typeof n.text === 'string')) {
    throw new InvalidOptionsError(`${what} must be a working-memory snapshot { scope, goal, createdAt, notes: [{ id, text }] }.`);
  }
  return { scope: s.scope, goal: s.goal ?? null, createdAt: s.createdAt, notes: s.notes.map((n) => ({ id: n.id, text: n.text })) };
}

function fromCreate(create: WorkingMemoryCreate, now: () => number): WorkingMemorySnapshot {
  if (!create || typeof create !== 'object' || typeof create.scope !== 'string' || create.scope === '') {
    throw new InvalidOptionsError('workingMemory.create needs a scope (a non-empty string).');
  }
  if (create.goal !== undefined && typeof create.goal !== 'string') throw new InvalidOptionsError('workingMemory.create.goal must be a string.');
  if (create.now !== undefined && !Number.isFinite(create.now)) throw new InvalidOptionsError('workingMemory.create.now must be a time in ms.');
  const notes = (create.notes ?? []).map((n, i) => (typeof n === 'string' ? { id: `n${i + 1}`, text: n } : n));
  return checkSnapshot({ scope: create.scope, goal: create.goal ?? null, createdAt: create.now ?? now(), notes }, 'workingMemory.create');
}

/** Checks the option's shape; nothing is made yet. */
export function checkWorkingMemoryOptions(options: WorkingMemoryOptions): void {
  if (options === null || typeof options !== 'object') throw new InvalidOptionsError('workingMemory must be an object { snapshot?, create?, tools? }.');
  if (options.snapshot !== undefined && options.create !== undefined) {
    throw new InvalidOptionsError('workingMemory takes snapshot or create, not both.');
  }
  if (options.tools !== undefined && typeof options.tools !== 'boolean') throw new InvalidOptionsError('workingMemory.tools must be a boolean.');
  if (options.snapshot !== undefined) checkSnapshot(options.snapshot, 'workingMemory.snapshot');
}

/** The record a new run starts with. */
export function initialWorkingMemory(options: WorkingMemoryOptions, now: () => number): WorkingMemoryRecord {
  const snapshot = options.snapshot !== undefined
    ? checkSnapshot(options.snapshot, 'workingMemory.snapshot')
    : options.create !== undefined ? fromCreate(options.create, now) : { scope: '', goal: null, createdAt: now(), notes: [] };
  return { revision: 0, snapshot, applied: {} };
}

/** A stored record, as a resume reads it. */
export function storedWorkingMemory(value: unknown): WorkingMemoryRecord {
  const r = value as Partial<WorkingMemoryRecord> | null;
  if (!r || typeof r !== 'object' || typeof r.revision !== 'number') throw new InvalidOptionsError('The stored working memory is not a working-memory record.', 'invalid_envelope');
  return { revision: r.revision, snapshot: checkSnapshot(r.snapshot, 'The stored working memory'), applied: { ...(r.applied ?? {}) } };
}

/** The text the request's tail carries. */
export function workingMemoryText(snapshot: WorkingMemorySnapshot): string {
  const lines: string[] = [];
  if (snapshot.goal) lines.push(`Goal: ${snapshot.goal}`);
  if (snapshot.notes.length > 0) {
    lines.push('Notes:');
    for (const note of snapshot.notes) lines.push(`- [${note.id}] ${note.text}`);
  }
  return lines.join('\n');
}

/** What the tools need from the run: the record, and a way to apply a patch once. */
export interface WorkingMemoryHost {
  current(): WorkingMemoryRecord;
  /** Applies `patch` under `key` unless a patch with that key was applied; answers the revision it made. */
  apply(key: string, patch: (snapshot: WorkingMemorySnapshot) => WorkingMemorySnapshot): number;
}

const text = (value: unknown, field: string): string => {
  if (typeof value !== 'string' || value.trim() === '') throw new Error(`${field} must be a non-empty string.`);
  return value;
};

/** The three tools, bound to a run's working memory. */
export function workingMemoryTools(host: WorkingMemoryHost): Record<(typeof WORKING_MEMORY_TOOLS)[number], AgentTool> {
  const key = (ctx: { modelStep: number; toolCallId: string }) => `${ctx.modelStep}:${ctx.toolCallId}`;
  return {
    working_memory_read: {
      description: 'Read the working memory: the goal and the notes kept so far.',
      parameters: { type: 'object', properties: {}, additionalProperties: false },
      replay: 'idempotent',
      execute: () => ({ revision: host.current().revision, ...host.current().snapshot }),
    },
    working_memory_add: {
      description: 'Add a note to the working memory. Answers the note id.',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
      replay: 'idempotent',
      execute: (args: { text: string }, ctx) => {
        const note = text(args?.text, 'text');
        let id = '';
        const revision = host.apply(key(ctx), (s) => {
          id = `n${s.notes.length + 1}`;
          while (s.notes.some((n) => n.id === id)) id = `${id}'`;
          return { ...s, notes: [...s.notes, { id, text: note }] };
        });
        return { revision, ...(id ? { id } : {}) };
      },
    },
    working_memory_update: {
      description: 'Change the goal, or the text of a note (by its id), in the working memory.',
      parameters: {
        type: 'object',
        properties: { id: { type: 'string' }, text: { type: 'string' }, goal: { type: 'string' } },
        additionalProperties: false,
      },
      replay: 'idempotent',
      execute: (args: { id?: string; text?: string; goal?: string }, ctx) => {
        if (args?.goal === undefined && args?.id === undefined) throw new Error('Give a goal, or a note id with its new text.');
        const revision = host.apply(key(ctx), (s) => {
          let next = s;
          if (args.goal !== undefined) next = { ...next, goal: text(args.goal, 'goal') };
          if (args.id !== undefined) {
            const body = text(args.text, 'text');
            if (!next.notes.some((n) => n.id === args.id)) throw new Error(`No note has the id ${args.id}.`);
            next = { ...next, notes: next.notes.map((n) => (n.id === args.id ? { id: n.id, text: body } : n)) };
          }
          return next;
        });
        return { revision };
      },
    },
  };
}
