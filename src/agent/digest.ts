import { createHash } from 'node:crypto';
import { canonicalJson } from './json.js';

/** sha256 of a value's canonical JSON, as `sha256:<hex>`. */
export function digestOf(value: unknown): string {
  return `sha256:${createHash('sha256').update(canonicalJson(value)).digest('hex')}`;
}
