/**
 * XState restores whatever it is given: a state that no longer exists turns
 * into an errored actor, a renamed child source silently drops the child. So
 * a stored snapshot is checked against the machines before it is restored.
 */
import { InvalidOptionsError } from '../errors/index.js';
import { runMachine, toolCallMachine } from '../../machines/index.js';

interface StoredSnapshot {
  status?: unknown;
  value?: unknown;
  context?: unknown;
  children?: Record<string, { src?: unknown; snapshot?: StoredSnapshot } | undefined>;
}

type Machine = typeof runMachine | typeof toolCallMachine;

/**
 * State values each machine resolved, by {@link valueKey}. Whether XState resolves a value depends on the value alone
 * (the context is only carried into the snapshot it makes), and a run has a handful of states, so a resume checks
 * its state by a look-up instead of resolving it again. Only values that resolved are kept, at most
 * {@link RESOLVED_LIMIT} per machine: a stored value that does not is refused every time, as before.
 */
const resolved = new Map<Machine, Set<string>>();
const RESOLVED_LIMIT = 512;

/** A key two state values share only when they are the same strings and plain objects, key order included; null for any other value. */
function valueKey(value: unknown): string | null {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null || typeof value !== 'object') return null;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return null;
  let key = '{';
  for (const name of Object.keys(value)) {
    const inner = valueKey((value as Record<string, unknown>)[name]);
    if (inner === null) return null;
    key += `${JSON.stringify(name)}:${inner},`;
  }
  return `${key}}`;
}

function resolvable(machine: Machine, snapshot: StoredSnapshot): boolean {
  const key = valueKey(snapshot.value);
  let known = resolved.get(machine);
  if (key !== null && known?.has(key)) return true;
  try {
    machine.resolveState({ value: snapshot.value as never, context: snapshot.context as never });
  } catch {
    return false;
  }
  if (key !== null) {
    if (!known) resolved.set(machine, (known = new Set()));
    if (known.size < RESOLVED_LIMIT) known.add(key);
  }
  return true;
}

export function checkSnapshot(runId: string, value: unknown): void {
  const refuse = (why: string) => {
    throw new InvalidOptionsError(`Stored snapshot of run ${runId} cannot be restored: ${why}`, 'invalid_envelope');
  };
  if (value === null || typeof value !== 'object') return refuse('it is not an object.');
  const snapshot = value as StoredSnapshot;
  if (typeof snapshot.context !== 'object' || snapshot.context === null) return refuse('it has no context.');
  if (!resolvable(runMachine, snapshot)) return refuse(`state ${JSON.stringify(snapshot.value)} does not exist in the run machine.`);
  for (const [id, child] of Object.entries(snapshot.children ?? {})) {
    if (!child) continue;
    if (child.src === 'toolCall') {
      if (!child.snapshot || !resolvable(toolCallMachine, child.snapshot)) return refuse(`call ${id} is in a state the tool-call machine does not have.`);
      continue;
    }
    // Invoked promises of the run itself carry their own id as src; they hold no state to check.
    if (typeof child.src !== 'string' || !(child.src in (runMachine.implementations.actors ?? {}))) {
      return refuse(`child ${id} has an unknown source ${JSON.stringify(child.src)}.`);
    }
  }
}
