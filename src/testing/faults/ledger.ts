/**
 * The outside world, for crash tests: a ledger of effects that lives outside
 * every runtime, and tools that write to it under the call's stable identity.
 */
import type { AgentTool, JsonValue, ToolExecuteContext } from '../../agent/types.js';
import { InjectedFaultError } from './store.js';

/** Counts of effects by key. It belongs to the test, so it survives any simulated crash. */
export interface Ledger {
  /** How many times `key` was recorded (0 when never). */
  count(key: string): number;
  /** A copy of every count, by key. */
  entries(): Record<string, number>;
  /** Records one occurrence of `key`. */
  record(key: string): void;
  /** The sum of all counts; with `toolName`, only of keys that {@link ledgerTool} wrote for that tool. */
  total(toolName?: string): number;
}

/** Creates an empty {@link Ledger}. */
export function createLedger(): Ledger {
  const counts = new Map<string, number>();
  return {
    count: (key) => counts.get(key) ?? 0,
    entries: () => Object.fromEntries(counts),
    record(key) {
      counts.set(key, (counts.get(key) ?? 0) + 1);
    },
    total(toolName) {
      let sum = 0;
      for (const [key, n] of counts) if (toolName === undefined || key.startsWith(`${toolName}@`)) sum += n;
      return sum;
    },
  };
}

/** Options of {@link ledgerTool}. */
export interface LedgerToolOptions<Args = any> {
  /** Marks the tool `replay: 'idempotent'`, so an interrupted call may run again by itself. @default false */
  idempotent?: boolean;
  /** `true`, or a predicate over the arguments: the call records its effect and then throws. @default false */
  fail?: boolean | ((args: Args) => boolean);
  /** The tool's raw result. @default `'<name> done'` */
  result?: (args: Args, ctx: ToolExecuteContext) => unknown;
  /** Holds every call for an approval verdict. @default false */
  needsApproval?: boolean;
  /** @default `'Records <name> in the test ledger.'` */
  description?: string;
  /** JSON Schema of the arguments. @default an object schema that accepts any properties */
  parameters?: AgentTool['parameters'];
}

/** The key {@link ledgerTool} records a call under: `<name>@<modelStep>:<toolCallId>`. */
export function ledgerKey(name: string, modelStep: number, toolCallId: string): string {
  return `${name}@${modelStep}:${toolCallId}`;
}

/**
 * A tool whose effect is one ledger entry under the call's identity
 * (`<name>@<modelStep>:<toolCallId>`, see {@link ledgerKey}), stable across resume, so a count above
 * 1 is an effect that ran twice. With `fail`, the effect is recorded and then the call throws a
 * {@link InjectedFaultError} (code `'injected_fault'`): the effect happened, its call failed.
 */
export function ledgerTool<Args = any>(ledger: Ledger, name: string, options: LedgerToolOptions<Args> = {}): AgentTool<Args> {
  const tool: AgentTool<Args> = {
    description: options.description ?? `Records ${name} in the test ledger.`,
    parameters: options.parameters ?? ({ type: 'object', properties: {}, additionalProperties: true } as JsonValue),
    execute(args, ctx) {
      ledger.record(ledgerKey(name, ctx.modelStep, ctx.toolCallId));
      const fail = typeof options.fail === 'function' ? options.fail(args) : options.fail === true;
      if (fail) throw new InjectedFaultError(`${name} failed (injected)`);
      return options.result ? options.result(args, ctx) : `${name} done`;
    },
  };
  if (options.idempotent) tool.replay = 'idempotent';
  if (options.needsApproval) tool.needsApproval = true;
  return tool;
}
