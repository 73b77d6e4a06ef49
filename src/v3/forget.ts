/**
 * What a forget does to the copies of a redacted package's retrieval block
 * (docs/forget.md). Pure functions the three V3 stores share: which message
 * texts are the compiler's block of a package, the stand-in that replaces
 * each copy, the rewrite of a stored record, and what a resume drops.
 *
 * A copy is found by its exact text when the package's blocks are at hand
 * (the forget reads them before it deletes them; a package that arrives
 * redacted comes with them), and by its shape when they are gone (a later
 * save of a run that points to a package redacted before): the marker, one
 * `[source id] ` line per record the manifest counts, and the close.
 */
import { contextMarker, retrievalMessage } from '../context/render.js';
import type { ContextBlock, ContextManifest } from '../context/types.js';
import type { AgentRunEnvelope } from '../agent/record-types.js';
import { planSave, type SavePlan } from '../stores/write-plan.js';
import type { AgentRunContextStep, AgentRunEnvelopeV3 } from './envelope.js';
import { splitSteps } from './store-steps.js';

/** The line a stand-in holds where the records were. */
export const FORGOTTEN_LINE = '[forgotten]';

const CLOSE = '</cairn_context>';

/** The stand-in of the block marked `<cairn_context pass="P" step="S">`: the marker, `[forgotten]`, the close. No record. */
export function standInText(pass: number, step: number): string {
  return `${contextMarker(pass, step)}\n${FORGOTTEN_LINE}\n${CLOSE}`;
}

/** Answers the stand-in for a message text that is a copy to replace, or null for one that stays. */
export type CopyMatcher = (content: string) => string | null;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A manifest with what rendering needs; anything else (a store test's placeholder manifest) has no block to find. */
function manifestOf(value: unknown): ContextManifest | null {
  if (!isObject(value) || !Number.isInteger(value.pass) || !Number.isInteger(value.step)) return null;
  const placement = value.placement;
  if (!isObject(placement) || placement.retrieval !== 'appended') return null;
  return value as unknown as ContextManifest;
}

function blocksOf(value: unknown): ContextBlock[] | null {
  if (!Array.isArray(value)) return null;
  const ok = value.every((b) => isObject(b) && typeof b.kind === 'string' && typeof b.source === 'string' && Array.isArray(b.records)
    && b.records.every((r) => isObject(r) && typeof r.text === 'string' && typeof r.id === 'string'));
  return ok ? (value as ContextBlock[]) : null;
}

/**
 * The exact text of the retrieval block the compiler appended for a package (its blocks and its step's manifest),
 * and its stand-in; null when the step appended none.
 */
export function standInFor(blocks: unknown, manifest: unknown): { text: string; standIn: string } | null {
  const m = manifestOf(manifest);
  const b = blocksOf(blocks);
  if (!m || !b) return null;
  const message = retrievalMessage({ blocks: b, manifest: m });
  if (!message || typeof message.content !== 'string') return null;
  return { text: message.content, standIn: standInText(m.pass, m.step) };
}

/** Matches the exact texts of `targets`. */
export function exactMatcher(targets: readonly { text: string; standIn: string }[]): CopyMatcher {
  const byText = new Map(targets.map((t) => [t.text, t.standIn]));
  return (content) => byText.get(content) ?? null;
}

/**
 * Matches a block by the shape the manifest gives it, for a package whose blocks are gone: the step's marker, one
 * line opening `[<source> ` per record each retrieval block of the manifest counts (in order; a record's text may
 * run on over more lines), and the close. With `recordIds`, each of them must open one of those lines
 * (`[<source> <id>] `). A block with fewer records under the same marker (an overflow retry's) does not match, nor
 * does a message that only opens with the marker.
 */
export function shapeMatcher(manifest: unknown, recordIds: readonly string[] | null = null): CopyMatcher {
  const m = manifestOf(manifest);
  if (!m || !Array.isArray(m.blocks)) return () => null;
  const expected: string[] = [];
  for (const block of m.blocks) {
    if (!isObject(block) || block.kind !== 'retrieval' || typeof block.source !== 'string' || !Number.isInteger(block.records)) continue;
    for (let i = 0; i < (block.records as number); i++) expected.push(`[${block.source} `);
  }
  if (expected.length === 0) return () => null;
  const marker = contextMarker(m.pass, m.step);
  const standIn = standInText(m.pass, m.step);
  return (content) => {
    if (!content.startsWith(`${marker}\n`) || !content.endsWith(`\n${CLOSE}`)) return null;
    const lines = content.slice(marker.length + 1, content.length - CLOSE.length - 1).split('\n');
    let at = 0;
    const heads: string[] = [];
    for (const line of lines) {
      if (at < expected.length && line.startsWith(expected[at]!) && line.includes('] ')) {
        heads.push(line);
        at++;
      } else if (at === 0) {
        return null;
      }
    }
    if (at !== expected.length) return null;
    if (recordIds && !recordIds.every((id) => heads.some((h, i) => h.startsWith(`${expected[i]}${id}] `)))) return null;
    return standIn;
  };
}

/** Either matcher's answer. */
export function eitherMatcher(...matchers: CopyMatcher[]): CopyMatcher {
  return (content) => {
    for (const match of matchers) {
      const out = match(content);
      if (out !== null) return out;
    }
    return null;
  };
}

/**
 * A copy of `value` in which every user message whose text `match` answers holds the stand-in instead; the parts
 * that hold none are shared with `value`, and an object found twice (a terminal result's messages are the
 * history's) is rewritten once, so both places still hold the same object.
 */
export function rewriteCopies<T>(value: T, match: CopyMatcher): { value: T; rewritten: number } {
  const seen = new Map<object, unknown>();
  let rewritten = 0;
  const walk = (v: unknown): unknown => {
    if (typeof v !== 'object' || v === null) return v;
    if (seen.has(v)) return seen.get(v);
    let out: unknown = v;
    if (Array.isArray(v)) {
      let copy: unknown[] | null = null;
      v.forEach((item, i) => {
        const next = walk(item);
        if (next !== item) (copy ??= [...v])[i] = next;
      });
      if (copy) out = copy;
    } else {
      const o = v as Record<string, unknown>;
      const standIn = o.role === 'user' && typeof o.content === 'string' ? match(o.content) : null;
      if (standIn !== null && standIn !== o.content) {
        rewritten++;
        out = { ...o, content: standIn };
      } else {
        let copy: Record<string, unknown> | null = null;
        for (const key of Object.keys(o)) {
          const next = walk(o[key]);
          if (next !== o[key]) (copy ??= { ...o })[key] = next;
        }
        if (copy) out = copy;
      }
    }
    seen.set(v, out);
    return out;
  };
  const out = walk(value) as T;
  return { value: out, rewritten };
}

/**
 * The record with every copy `match` answers rewritten into its stand-in: the checkpoint (the snapshot, where the
 * history is) and the stored result's messages. Nothing else changes (revision, times, context, receipts). The
 * record itself is not changed; a record with nothing to rewrite comes back as it is.
 */
export function rewriteRecordCopies(record: AgentRunEnvelopeV3, match: CopyMatcher): { record: AgentRunEnvelopeV3; rewritten: number } {
  const { value, rewritten } = rewriteCopies({ snapshot: record.snapshot, result: record.result }, match);
  if (rewritten === 0) return { record, rewritten };
  const descriptors = Object.getOwnPropertyDescriptors(record) as Record<string, PropertyDescriptor>;
  descriptors.snapshot = { value: value.snapshot, writable: true, enumerable: true, configurable: true };
  if (Object.hasOwn(record, 'result')) descriptors.result = { value: value.result, writable: true, enumerable: true, configurable: true };
  return { record: Object.defineProperties({}, descriptors) as AgentRunEnvelopeV3, rewritten };
}

/** The exact-text matcher of the steps of `record` whose package is one of `blocks` (digest to its blocks). */
export function recordTargets(steps: readonly AgentRunContextStep[] | undefined, blocks: ReadonlyMap<string, unknown>): CopyMatcher {
  const targets: { text: string; standIn: string }[] = [];
  for (const step of steps ?? []) {
    if (!blocks.has(step?.blob?.digest)) continue;
    const target = standInFor(blocks.get(step.blob.digest), step.manifest);
    if (target) targets.push(target);
  }
  return exactMatcher(targets);
}

/**
 * What a resume drops from the history: the stand-ins of the steps whose package a forget redacted, and any block
 * of such a step that still holds its records (found by its shape). Answers the history without them, and how many
 * it dropped.
 */
export function dropRedactedBlocks(messages: readonly unknown[], steps: readonly AgentRunContextStep[]): { messages: unknown[]; dropped: number } {
  const matchers: CopyMatcher[] = [];
  for (const step of steps) {
    if (step.redacted !== true) continue;
    const m = manifestOf(step.manifest);
    if (!m) continue;
    const standIn = standInText(m.pass, m.step);
    matchers.push((content) => (content === standIn ? standIn : null), shapeMatcher(m));
  }
  if (matchers.length === 0) return { messages: [...messages], dropped: 0 };
  const match = eitherMatcher(...matchers);
  const kept = messages.filter((msg) => !(isObject(msg) && msg.role === 'user' && typeof msg.content === 'string' && match(msg.content) !== null));
  return { messages: kept, dropped: messages.length - kept.length };
}

/** A redacted package a save points to: its blocks when the save carries them, and its forgotten record ids. */
export interface RedactedPackage {
  blocks?: unknown;
  forgottenIds: readonly string[];
}

/**
 * The matcher a save uses for the copies of the redacted packages it points to: each step's exact text when its
 * blocks are at hand, else its shape with the package's forgotten records.
 */
export function saveMatcher(steps: readonly AgentRunContextStep[] | undefined, redacted: ReadonlyMap<string, RedactedPackage>): CopyMatcher {
  const matchers: CopyMatcher[] = [];
  const targets: { text: string; standIn: string }[] = [];
  for (const step of steps ?? []) {
    const pkg = redacted.get(step?.blob?.digest);
    if (!pkg) continue;
    const target = pkg.blocks === undefined ? null : standInFor(pkg.blocks, step.manifest);
    if (target) targets.push(target);
    else matchers.push(shapeMatcher(step.manifest, pkg.forgottenIds));
  }
  return eitherMatcher(exactMatcher(targets), ...matchers);
}

/**
 * The rows of a record rewritten in place (a forget's rewrite of a stored run): every transcript and receipt row and
 * the head, planned from nothing, so the head's index and digests are those of the rows written. Each row keeps the
 * revision of the save that wrote it (`record.saves`, from a load with `saves: true`); the context step rows are not
 * part of it (a manifest holds no record).
 */
export function rewrittenRows(record: AgentRunEnvelopeV3): {
  plan: SavePlan;
  messages: { index: number; bytes: Uint8Array; revision: number }[];
  receipts: { key: string; modelStep: number; bytes: Uint8Array; revision: number }[];
} {
  const saves = record.saves;
  const { head } = splitSteps(record);
  const plan = planSave(head as unknown as AgentRunEnvelope, undefined);
  return {
    plan,
    messages: plan.messages.map((m) => ({ ...m, revision: saves?.messages[m.index] ?? record.revision })),
    receipts: plan.receipts.map((r) => ({ ...r, revision: saves?.receipts[r.key] ?? record.revision })),
  };
}

/**
 * A resume of a run a forget reached (it loads with steps marked `redacted`): the stand-ins of those steps, and any
 * of their blocks still holding records, leave the history the run resumes from (the loaded record, changed in
 * place). True when something left: the prompt's prefix is not the one the last call sent.
 */
export function dropOnResume(record: AgentRunEnvelopeV3): boolean {
  const steps = record.context?.steps ?? [];
  if (!steps.some((s) => s.redacted === true)) return false;
  const context = (record.snapshot as { context?: { messages?: unknown } } | null)?.context;
  if (!context || !Array.isArray(context.messages)) return false;
  const { messages, dropped } = dropRedactedBlocks(context.messages, steps);
  if (dropped === 0) return false;
  context.messages = messages;
  return true;
}
