/**
 * A structural sanity check of a JSON Schema, for the doctor. It does not
 * validate instances and does not know every draft's details: it finds the
 * mistakes that make a provider refuse a tool or an output schema (a wrong
 * `type`, `required` naming a property that is not there, a `$ref` that points
 * nowhere, a value that is not JSON) and says where each one is.
 */

export interface SchemaProblem {
  /** Where, below the schema: `properties.env.type`; empty for the root. */
  at: string;
  message: string;
}

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'] as const;
const SCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'] as const;
const SCHEMA_VALUES = ['additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems', 'additionalItems'] as const;
const COUNTS = ['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'minContains', 'maxContains'] as const;
const MAX_DEPTH = 64;
/** Enough to fix a schema; past this the report would only be noise. */
const MAX_PROBLEMS = 10;

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)
  && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);

const join = (at: string, key: string | number): string =>
  typeof key === 'number' ? `${at}[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? (at ? `${at}.${key}` : key) : `${at}[${JSON.stringify(key)}]`;

/** The first place where `value` is not plain JSON (a cycle, a function, NaN, a class instance, ...). */
export function notJson(value: unknown, at = '', seen: Set<object> = new Set()): SchemaProblem | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : { at, message: `${value} is not a JSON number` };
  if (typeof value !== 'object') return { at, message: `a ${typeof value} is not JSON` };
  if (seen.has(value)) return { at, message: 'the value refers to itself (a cycle), so it cannot be sent as JSON' };
  if (!Array.isArray(value) && !isPlainObject(value)) return { at, message: 'a class instance is not plain JSON' };
  seen.add(value);
  const entries: Array<[string | number, unknown]> = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  for (const [key, child] of entries) {
    const found = notJson(child, join(at, key), seen);
    if (found) return found;
  }
  seen.delete(value);
  return undefined;
}

/** Resolves a local `#/...` JSON pointer inside `root`. */
function resolvePointer(root: unknown, ref: string): boolean {
  if (ref === '#') return true;
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !Object.prototype.hasOwnProperty.call(node, key)) return false;
    node = (node as Record<string, unknown>)[key];
  }
  return true;
}

/**
 * Problems of `schema` as a JSON Schema; `objectRoot` also asks for
 * `type: 'object'` at the root, as tool parameters need.
 */
export function checkJsonSchema(schema: unknown, options: { objectRoot?: boolean } = {}): SchemaProblem[] {
  const problems: SchemaProblem[] = [];
  const add = (at: string, message: string) => {
    if (problems.length < MAX_PROBLEMS) problems.push({ at, message });
  };
  const json = notJson(schema);
  if (json) return [json];
  if (!isPlainObject(schema)) {
    return [{ at: '', message: `a schema must be an object, got ${schema === null ? 'null' : Array.isArray(schema) ? 'an array' : typeof schema}` }];
  }
  if (options.objectRoot && schema.type !== 'object') {
    add('type', `the root must have type: 'object' (the arguments are an object), got ${JSON.stringify(schema.type)}`);
  }

  const walk = (node: unknown, at: string, depth: number): void => {
    if (problems.length >= MAX_PROBLEMS) return;
    if (typeof node === 'boolean') return;
    if (!isPlainObject(node)) {
      add(at, `a subschema must be an object or a boolean, got ${Array.isArray(node) ? 'an array' : JSON.stringify(node)}`);
      return;
    }
    if (depth > MAX_DEPTH) {
      add(at, `the schema nests deeper than ${MAX_DEPTH} levels`);
      return;
    }
    const type = node.type;
    if (type !== undefined) {
      const list = Array.isArray(type) ? type : [type];
      if (list.length === 0) add(join(at, 'type'), 'type must not be an empty list');
      for (const t of list) {
        if (typeof t !== 'string' || !TYPES.has(t)) {
          add(join(at, 'type'), `unknown type ${JSON.stringify(t)}; use one of ${[...TYPES].join(', ')}`);
        }
      }
      if (new Set(list).size !== list.length) add(join(at, 'type'), 'type lists a type twice');
    }
    for (const key of SCHEMA_MAPS) {
      const map = node[key];
      if (map === undefined) continue;
      if (!isPlainObject(map)) {
        add(join(at, key), `${key} must be an object of schemas`);
        continue;
      }
      for (const [name, sub] of Object.entries(map)) walk(sub, join(join(at, key), name), depth + 1);
    }
    for (const key of SCHEMA_LISTS) {
      const list = node[key];
      if (list === undefined) continue;
      if (!Array.isArray(list) || list.length === 0) {
        add(join(at, key), `${key} must be a non-empty array of schemas`);
        continue;
      }
      list.forEach((sub, i) => walk(sub, join(join(at, key), i), depth + 1));
    }
    for (const key of SCHEMA_VALUES) {
      if (node[key] !== undefined) walk(node[key], join(at, key), depth + 1);
    }
    if (node.items !== undefined) {
      // An array of schemas is the tuple form of older drafts.
      if (Array.isArray(node.items)) node.items.forEach((sub, i) => walk(sub, join(join(at, 'items'), i), depth + 1));
      else walk(node.items, join(at, 'items'), depth + 1);
    }
    const required = node.required;
    if (required !== undefined) {
      if (!Array.isArray(required) || required.some((r) => typeof r !== 'string')) {
        add(join(at, 'required'), 'required must be an array of property names (strings)');
      } else {
        if (new Set(required).size !== required.length) add(join(at, 'required'), 'required names a property twice');
        const props = isPlainObject(node.properties) ? node.properties : undefined;
        if (props && !isPlainObject(node.patternProperties)) {
          for (const name of required) {
            if (!Object.prototype.hasOwnProperty.call(props, name)) {
              add(join(at, 'required'), `required names "${name}", which properties does not define`);
            }
          }
        }
      }
    }
    if (node.enum !== undefined && (!Array.isArray(node.enum) || node.enum.length === 0)) {
      add(join(at, 'enum'), 'enum must be a non-empty array');
    }
    if (node.$ref !== undefined) {
      if (typeof node.$ref !== 'string') add(join(at, '$ref'), '$ref must be a string');
      else if (node.$ref.startsWith('#') && !(node.$ref === '#' || node.$ref.startsWith('#/'))) {
        // An anchor ("#name"): left to the validator.
      } else if (node.$ref.startsWith('#') && !resolvePointer(schema, node.$ref)) {
        add(join(at, '$ref'), `$ref "${node.$ref}" points to nothing in this schema`);
      }
    }
    if (node.pattern !== undefined) {
      if (typeof node.pattern !== 'string') add(join(at, 'pattern'), 'pattern must be a string');
      else {
        try {
          new RegExp(node.pattern, 'u');
        } catch {
          add(join(at, 'pattern'), `pattern ${JSON.stringify(node.pattern)} is not a valid regular expression`);
        }
      }
    }
    for (const key of COUNTS) {
      const n = node[key];
      if (n !== undefined && (typeof n !== 'number' || !Number.isInteger(n) || n < 0)) {
        add(join(at, key), `${key} must be a non-negative integer`);
      }
    }
    for (const key of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'] as const) {
      const n = node[key];
      // Draft 4 spelled exclusiveMinimum/Maximum as booleans.
      const ok = typeof n === 'number' || (typeof n === 'boolean' && key.startsWith('exclusive'));
      if (n !== undefined && !ok) add(join(at, key), `${key} must be a number`);
    }
    if (node.multipleOf !== undefined && !(typeof node.multipleOf === 'number' && node.multipleOf > 0)) {
      add(join(at, 'multipleOf'), 'multipleOf must be a number above 0');
    }
    for (const [lo, hi] of [['minimum', 'maximum'], ['minLength', 'maxLength'], ['minItems', 'maxItems'], ['minProperties', 'maxProperties']] as const) {
      const a = node[lo];
      const b = node[hi];
      if (typeof a === 'number' && typeof b === 'number' && a > b) add(join(at, lo), `${lo} (${a}) is above ${hi} (${b}): nothing can match`);
    }
    for (const key of ['title', 'description'] as const) {
      if (node[key] !== undefined && typeof node[key] !== 'string') add(join(at, key), `${key} must be a string`);
    }
  };
  walk(schema, '', 0);
  return problems;
}

/** Whether a value is a Standard Schema (zod, valibot, ...), which validates itself. */
export function isStandardSchemaValue(value: unknown): boolean {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return false;
  const std = (value as Record<string, unknown>)['~standard'];
  return typeof std === 'object' && std !== null && typeof (std as Record<string, unknown>).validate === 'function';
}
