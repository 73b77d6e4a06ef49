/** What changed between two recorded MCP tool catalogs, for the binding error's details and the run's warnings. */

/**
 * Which tools of the catalog changed, for people, without values:
 * `mcp tool notes__add was added`, `mcp tool notes__add: its schemas, description, replay or approval`.
 */
export function describeCatalogChanges(before: Record<string, string> | undefined, now: Record<string, string> | undefined): string[] {
  if (!before || !now) return ['the MCP tool catalog'];
  const out: string[] = [];
  for (const name of [...new Set([...Object.keys(before), ...Object.keys(now)])].sort()) {
    if (!(name in before)) out.push(`mcp tool ${name} was added`);
    else if (!(name in now)) out.push(`mcp tool ${name} was removed`);
    else if (before[name] !== now[name]) out.push(`mcp tool ${name}: its schemas, description, replay or approval`);
  }
  return out.length > 0 ? out : ['the MCP tool catalog'];
}
