/**
 * What a V3 leg with `versionedMemory` keeps beside the run actor: the run's
 * memory intents (saved in `memoryIntents` with every envelope, like the
 * working memory), the session's tools, and the extraction after the run
 * completed.
 *
 * A tool write's intent moves with its tool call's receipt, in the same save
 * (intended with `executing`, committed with `executed`, acknowledged with
 * `completed`): the save about to be made is read for the memory tools'
 * receipts, and each intent's chart is moved to match. No save of its own.
 *
 * The extraction runs right after the terminal commit (which carries its
 * intent, `intended`), inside that save's call, so under the run's lease and
 * before the run's result is handed out: the claim, the session's commit, the
 * acknowledgment, each saved as the next revision (decision 016).
 */
import { BindingChangedError } from '../errors/index.js';
import { unbuiltReceiptsOf } from '../agent/envelope.js';
import type { AgentRunEnvelope, AgentToolReceipt } from '../agent/types.js';
import type { AgentTool } from '../agent/tool-types.js';
import type { AgentRunSaveOptions } from '../stores/types.js';
import { MEMORY_WRITE_TOOLS, type VersionedMemoryReceipt } from '../memory/versioned/types.js';
import type { VersionedIntentEvent } from '../../machines/memory-intent-versioned-types.js';
import { intentErrorOf } from '../../machines/memory-intent-versioned.js';
import type { AgentRunEnvelopeV3, AgentRunMemoryIntent } from './envelope.js';
import type { AgentRunStoreV3 } from './store-types.js';
import type { AgentEventV3Extra } from './run-types.js';
import type { CheckedVersionedMemory } from './versioned-options.js';
import { freshExtractIntent, isSettled, moveToolIntent } from './versioned-intents.js';
import { chatIdsOf, extractIntent, type VersionedBinding } from './versioned-extract.js';

const WRITES: ReadonlySet<string> = new Set(MEMORY_WRITE_TOOLS);
/** Receipt statuses of a call whose tool ran and returned: its commit happened. */
const RAN = new Set(['executed', 'completed', 'projection-failed', 'unstorable', 'validation-failed']);

/** The binding part of a V3 record's versioned memory, if it has one. */
export function storedVersionedBinding(record: { binding?: unknown }): VersionedBinding | undefined {
  return (record.binding as { versionedMemory?: VersionedBinding } | undefined)?.versionedMemory;
}

/** A resume (or a reconciliation) of a run must bring the memory session scope the run was bound to, or none when it had none. */
export function checkVersionedBinding(record: { binding?: unknown }, memory: { scopeKey: string } | null): void {
  const stored = storedVersionedBinding(record);
  if ((stored?.scope ?? null) !== (memory?.scopeKey ?? null)) {
    throw new BindingChangedError(['versionedMemory'], ['the versioned memory session scope']);
  }
}

export class VersionedMemoryLeg {
  /** The record's intents, in the order they were made. */
  intents: AgentRunMemoryIntent[] = [];
  /** The status each intent's last `memory-intent` event said. */
  private readonly announced = new Map<string, string>();
  /** Receipts the tool calls of this leg committed, by operation id (read back after each write tool returned). */
  private readonly receipts = new Map<string, VersionedMemoryReceipt>();
  readonly binding: VersionedBinding;
  /** How many of the run's ended receipts the last save's scan read. */
  private scanned = 0;

  constructor(
    readonly memory: CheckedVersionedMemory, readonly runId: string, readonly store: AgentRunStoreV3,
    private readonly sink: () => ((event: AgentEventV3Extra) => void) | null, private readonly now: () => number,
  ) {
    this.binding = { scope: memory.scopeKey, ...(memory.extract?.maxTurns !== undefined ? { maxTurns: memory.extract.maxTurns } : {}) };
  }

  /** The leg's normalized options, once the engine made them: every envelope's binding carries the session's scope. */
  bind(opts: { binding: object; chat?: { store: { loadChat(chatId: string): Promise<unknown> }; chatId: string } | null }): void {
    (opts.binding as { versionedMemory?: VersionedBinding }).versionedMemory = this.binding;
    this.chat = opts.chat ?? null;
  }

  private chat: { store: { loadChat(chatId: string): Promise<unknown> }; chatId: string } | null = null;

  /** The session's tools, each write tool handing its commit's receipt to the save of its tool receipt. */
  tools(): Record<string, AgentTool> {
    return this.memory.session.tools({ runId: this.runId, onReceipt: (receipt) => this.receipts.set(receipt.operationId, receipt) }) as Record<string, AgentTool>;
  }

  /** A stored record is being resumed: its intents (and the binding's input count) are the leg's from now on. */
  restore(record: AgentRunEnvelopeV3): void {
    this.intents = [...(record.memoryIntents ?? [])];
    this.scanned = 0;
    for (const intent of this.intents) this.announced.set(intent.operationId, intent.status);
    const stored = storedVersionedBinding(record);
    if (stored?.inputCount !== undefined) this.binding.inputCount = stored.inputCount;
  }

  private find(operationId: string): AgentRunMemoryIntent | null {
    return this.intents.find((i) => i.operationId === operationId) ?? null;
  }

  private put(entry: AgentRunMemoryIntent): void {
    const at = this.intents.findIndex((i) => i.operationId === entry.operationId);
    this.intents = at < 0 ? [...this.intents, entry] : this.intents.map((i, k) => (k === at ? entry : i));
  }

  /**
   * Before a save: the binding part, the input count (the first save holds the run's input), the tool intents that
   * move with the receipts this save carries, and the extraction's intent in the terminal commit.
   */
  async beforeSave(envelope: AgentRunEnvelope): Promise<void> {
    const context = (envelope.snapshot as unknown as { context?: { messages?: unknown[]; chat?: { inputCount?: number } | null } }).context;
    if (this.binding.inputCount === undefined && envelope.revision === 1) {
      this.binding.inputCount = context?.chat?.inputCount ?? context?.messages?.length ?? 0;
    }
    (envelope.binding as unknown as { versionedMemory?: VersionedBinding }).versionedMemory = { ...this.binding };
    if (this.memory.tools) await this.moveToolIntents(envelope);
    if (this.memory.extract && envelope.status === 'completed') {
      const operationId = this.extractOperationId();
      if (!this.find(operationId)) this.put(freshExtractIntent(operationId));
    }
  }

  private extractOperationId(): string {
    return this.memory.session.operationId({ kind: 'extract', runId: this.runId });
  }

  private async moveToolIntents(envelope: AgentRunEnvelope): Promise<void> {
    const lists = unbuiltReceiptsOf(envelope);
    // Ended receipts are never edited: the ones an earlier save of this leg read are not read again.
    const from = lists && lists.ended.length >= this.scanned ? this.scanned : 0;
    const receipts: readonly AgentToolReceipt[] = lists ? [...lists.ended.slice(from), ...lists.open] : Object.values(envelope.receipts ?? {});
    let scanned = lists ? lists.ended.length : 0;
    for (const [k, receipt] of receipts.entries()) {
      if (!WRITES.has(receipt.toolName)) continue;
      const operationId = this.memory.session.operationId({ kind: 'tool', runId: this.runId, modelStep: receipt.modelStep, toolCallId: receipt.toolCallId });
      const stored = this.find(operationId);
      if (stored && isSettled(stored)) continue;
      let events: VersionedIntentEvent[] | null;
      try {
        events = await this.eventsFor(receipt, operationId, stored);
      } catch {
        // The memory store could not say (its receipt read failed): the intent stays where it is, the next save asks again.
        if (lists && from + k < scanned) scanned = Math.min(scanned, from + k);
        continue;
      }
      if (events === null) continue;
      this.put(moveToolIntent(operationId, stored, events));
    }
    this.scanned = scanned;
  }


  /** The chart events that bring a tool intent to where its receipt is; null when the call has no intent. */
  private async eventsFor(receipt: AgentToolReceipt, operationId: string, stored: AgentRunMemoryIntent | null): Promise<VersionedIntentEvent[] | null> {
    const status = receipt.status;
    if (status === 'executing') return [];
    if (status === 'failed') {
      // The call threw, but its commit may have landed before (a lost answer): the session's receipt says which.
      const landed = stored?.status === 'committed' ? null : await this.memory.session.receipt(operationId).catch(() => undefined);
      if (landed) return [{ type: 'EXECUTED', receipt: landed }, { type: 'COMPLETED' }];
      if (stored?.status === 'committed') return [{ type: 'COMPLETED' }];
      return [{ type: 'FAILED', error: receipt.error ? intentErrorOf(receipt.error) : { name: 'Error', message: 'The memory tool call failed.' } }];
    }
    if (!RAN.has(status)) return null;
    const events: VersionedIntentEvent[] = [];
    if (!stored || stored.status === 'intended') {
      const found = this.receipts.get(operationId) ?? (await this.memory.session.receipt(operationId));
      if (!found) {
        // A call recorded as run whose validation failed before it ran made no commit (and has no intent).
        if (!stored && status === 'validation-failed') return null;
        return [{ type: 'FAILED', error: { name: 'MemoryError', message: `The memory tool call ran, but the session has no receipt of operation ${operationId}.` } }];
      }
      events.push({ type: 'EXECUTED', receipt: found });
    }
    if (status !== 'executed') events.push({ type: 'COMPLETED' });
    return events;
  }

  /** After a save landed: a `memory-intent` event for each intent whose status it made durable. */
  announce(): void {
    const sink = this.sink();
    for (const intent of this.intents) {
      if (this.announced.get(intent.operationId) === intent.status) continue;
      this.announced.set(intent.operationId, intent.status);
      sink?.({ type: 'memory-intent', operationId: intent.operationId, status: intent.status });
    }
  }

  /**
   * After a save landed. The terminal commit of a completed run with `extract` is followed here by the extraction,
   * each of its steps saved as the next revision under the save's lease; `record` (the engine's copy) takes the last
   * revision saved, so a save the engine makes after this one follows it. The extraction never fails the save.
   */
  async afterSave(record: AgentRunEnvelopeV3, options: AgentRunSaveOptions | undefined): Promise<void> {
    this.announce();
    if (!this.memory.extract || record.status !== 'completed') return;
    const intent = this.find(this.extractOperationId());
    if (!intent || intent.status !== 'intended') return;
    let last = record;
    await extractIntent({
      memory: this.memory, runId: this.runId, record, stored: null, binding: this.binding,
      ...(this.chat ? { chatIds: () => chatIdsOf(this.chat!, this.runId, record) } : {}),
      save: async (entry) => {
        this.put(entry);
        const next = { ...last, revision: last.revision + 1, updatedAt: this.now(), memoryIntents: this.intents } as AgentRunEnvelopeV3;
        try {
          await this.store.save(next, options?.lease ? { lease: options.lease } : undefined);
        } catch (error) {
          this.intents = last.memoryIntents ?? [];
          throw error;
        }
        last = next;
        record.revision = next.revision;
        record.memoryIntents = this.intents;
        this.announce();
      },
    }).catch(() => undefined);
  }
}
