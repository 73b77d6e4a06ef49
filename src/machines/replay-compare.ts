/**
 * How a replay compares the run it drives with the record: canonical JSON
 * (sorted keys, null read as absent), the first path where two values differ,
 * and the part of a persisted snapshot that history decides.
 */

/**
 * JSON with sorted keys: two values are equal when their canonical texts are.
 * A field that is null reads as absent: a record written before a field
 * existed does not have it, where the machine now starts it at null.
 */
export function canon(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    return Object.fromEntries(Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined && x !== null).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}

/** The first path at which two JSON values differ, or null. */
export function firstDifference(a: unknown, b: unknown, path: string): { path: string; expected: unknown; found: unknown } | null {
  if ((a ?? null) === null && (b ?? null) === null) return null;
  if (canon(a) === canon(b)) return null;
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d) return d;
    }
  } else if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const key of keys) {
      const d = firstDifference((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], path ? `${path}.${key}` : key);
      if (d) return d;
    }
  }
  return { path, expected: a, found: b };
}

export interface Persisted {
  value: unknown;
  status?: string;
  context: Record<string, unknown>;
  children?: Record<string, { src?: unknown; snapshot?: Persisted }>;
}

/** `value` with only the fields `shape` has: a record written before a field existed has no such field to compare. */
export function fieldsOf(value: Record<string, unknown>, shape: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!shape) return value;
  return Object.fromEntries(Object.entries(value).filter(([key]) => key in shape));
}

/** What is compared of a run snapshot: everything but usage (see the module comment), with the fields `shape` has. */
export function comparable(snapshot: Persisted, shape?: Persisted): unknown {
  // The plan is not history: each leg puts its own into the snapshot (and an older record may have none).
  const { usage: _u, usageByModel: _m, plan: _p, lastTurn, ...context } = snapshot.context as Record<string, unknown> & { lastTurn?: Record<string, unknown> | null };
  const turn = lastTurn ? (({ usage: _x, model: _y, response: _z, ...rest }) => rest)(lastTurn) : lastTurn;
  const children: Record<string, unknown> = {};
  for (const [id, child] of Object.entries(snapshot.children ?? {})) {
    if (child.src === 'toolCall' && child.snapshot) {
      const { plan: _q, ...callContext } = child.snapshot.context;
      children[id] = { value: child.snapshot.value, context: fieldsOf(callContext, shape?.children?.[id]?.snapshot?.context) };
    } else children[id] = { src: child.src };
  }
  return { value: snapshot.value, context: fieldsOf({ ...context, lastTurn: turn }, shape?.context), children };
}
