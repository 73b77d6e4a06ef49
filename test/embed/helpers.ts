/** Shared pieces of the embed tests: a refund agent, a scripted model that answers by what the history holds. */
import type { AgentTools, Message } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

/** Turn by turn: look the order up, refund it, answer. Decided from the history, so any process can pick up at any step. */
export function refundModel() {
  return createMockModel({
    strict: false,
    responses: [
      (request) => {
        const toolMessages = (request.messages as Message[]).filter((m) => m.role === 'tool').length;
        if (toolMessages === 0) return { toolCalls: [{ toolName: 'lookupOrder', args: { orderId: 'A-17' }, toolCallId: 'look' }] };
        if (toolMessages === 1) return { toolCalls: [{ toolName: 'refund', args: { orderId: 'A-17', amount: 20 }, toolCallId: 'pay' }] };
        return { text: 'Refunded 20 EUR on order A-17.' };
      },
    ],
  });
}

export function refundTools(effects: string[], hooks: { lookup?: () => Promise<void>; refund?: () => Promise<void> } = {}): AgentTools {
  return {
    lookupOrder: {
      parameters: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
      replay: 'idempotent',
      execute: async ({ orderId }: { orderId: string }) => {
        await hooks.lookup?.();
        return { orderId, paid: 20, status: 'LOOKUP-SECRET-delivered-damaged' };
      },
    },
    refund: {
      parameters: { type: 'object', properties: { orderId: { type: 'string' }, amount: { type: 'number' } }, required: ['orderId', 'amount'] },
      needsApproval: true,
      execute: async ({ orderId, amount }: { orderId: string; amount: number }) => {
        await hooks.refund?.();
        effects.push(`refund ${orderId} ${amount}`);
        return `REFUND-RECEIPT-${orderId}`;
      },
    },
  };
}

/** Resolves with the first snapshot of `actor` that `predicate` accepts. */
export function waitFor<S>(actor: { subscribe(o: { next(s: S): void; error(e: unknown): void }): { unsubscribe(): void }; getSnapshot(): S }, predicate: (s: S) => boolean, timeoutMs = 5_000): Promise<S> {
  return new Promise((resolve, reject) => {
    const now = actor.getSnapshot();
    if (predicate(now)) return resolve(now);
    const timer = setTimeout(() => {
      sub.unsubscribe();
      reject(new Error(`timed out; last snapshot: ${JSON.stringify(actor.getSnapshot())}`));
    }, timeoutMs);
    const sub = actor.subscribe({
      next(s) {
        if (!predicate(s)) return;
        clearTimeout(timer);
        sub.unsubscribe();
        resolve(s);
      },
      error(e) {
        if (predicate(actor.getSnapshot())) return resolve(actor.getSnapshot());
        clearTimeout(timer);
        reject(e);
      },
    });
  });
}
