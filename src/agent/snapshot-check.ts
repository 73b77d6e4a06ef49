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

function resolvable(machine: typeof runMachine | typeof toolCallMachine, snapshot: StoredSnapshot): boolean {
  try {
    machine.resolveState({ value: snapshot.value as never, context: snapshot.context as never });
    return true;
  } catch {
    return false;
  }
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
