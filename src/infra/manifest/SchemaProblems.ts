/**
 * What is wrong with a JSON Schema ajv refuses, each problem at its key (docs/manifest.md, the
 * JSON Schema row): the keys its meta-schema refuses, and every keyword and format ajv does not
 * know, found by one walk of the subschemas that a property test holds to ajv's strict compile.
 * Also the two ajv instances (one per dialect) the manifest check compiles with.
 */
import { Ajv } from "ajv"
import { Ajv2020 } from "ajv/dist/2020.js"
import addFormatsModule from "ajv-formats"
import { suggest } from "../../domain/manifest/internal/suggest.js"

const addFormats = addFormatsModule as unknown as (ajv: Ajv | Ajv2020) => void

// One instance per dialect. `strictSchema` makes typos in keywords (`tpye`) errors rather than
// no-ops; ajv's other strict checks are lints that refuse valid schemas (`{type: object,
// required: [a]}`, `properties` without `type`, union types, open tuples), so they stay off.
const makeAjv = <A extends Ajv | Ajv2020>(ajv: A): A => {
  addFormats(ajv)
  return ajv
}
const options = {
  strictSchema: true,
  strictNumbers: true,
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  allErrors: true,
  addUsedSchema: false
} as const
export const draft7 = makeAjv(new Ajv(options))
export const draft2020 = makeAjv(new Ajv2020(options))

/** A JSON pointer's keys (`/properties/a~1b` is ["properties", "a/b"]); the root's is none. */
export const pointerParts = (pointer: string): ReadonlyArray<string> =>
  pointer === "" ? [] : pointer.slice(1).split("/").map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))

/**
 * A JSON pointer's keys as a key path into `doc`: a part indexing an array is a number, so the
 * problem reads `prefixItems[1].format` (it read `prefixItems.1.format`).
 */
const keyPathIn = (doc: unknown, parts: ReadonlyArray<string>): ReadonlyArray<string | number> => {
  let value = doc
  return parts.map((part) => {
    const key = Array.isArray(value) && /^(0|[1-9]\d*)$/.test(part) ? Number(part) : part
    value = typeof value === "object" && value !== null ? (value as Record<string | number, unknown>)[key] : undefined
    return key
  })
}

export type SchemaProblem = { readonly why: string; readonly path: ReadonlyArray<string | number> }

/** The value at `path` (JSON pointer parts) in `doc`. */
const at = (doc: unknown, path: ReadonlyArray<string>): unknown =>
  path.reduce<unknown>((v, k) => (typeof v === "object" && v !== null ? (v as Record<string, unknown>)[k] : undefined), doc)

/**
 * Where a schema breaks its meta-schema, and how: each key that is wrong
 * (`properties.sha256.type`) and, for a value outside a set, the set and the value. Where the
 * meta-schema allows alternatives (`items`: a schema or a list of them), ajv complains of the
 * whole value too ("must be object,boolean" for a list whose second schema misspells a type):
 * only the deepest keys are said, each with the first of its errors, so that every problem is
 * said at once (the docs audit fixed one, checked again, and found the next).
 */
/** A value as a problem quotes it: a number YAML read as Infinity (`1e400`) is said so, not as JSON's `null`. */
const shown = (value: unknown): string => {
  if (typeof value !== "number" || Number.isFinite(value)) return JSON.stringify(value)
  return Number.isNaN(value) ? "NaN" : `${value} (a number beyond what JSON holds, about 1.8e308)`
}

const metaProblems = (ajv: Ajv | Ajv2020, schema: unknown): ReadonlyArray<SchemaProblem> => {
  if (ajv.validateSchema(schema as object) === true) return []
  const errors = ajv.errors ?? []
  // The keys some error lies below (every ancestor of every error's key), found once: comparing
  // each error with every other was quadratic (a schema of 24,000 broken properties took minutes).
  const above = new Set<string>()
  for (const e of errors) {
    for (let i = e.instancePath.lastIndexOf("/"); i >= 0; i = e.instancePath.lastIndexOf("/", i - 1)) {
      above.add(e.instancePath.slice(0, i))
      if (i === 0) break
    }
  }
  const seen = new Set<string>()
  const out: Array<SchemaProblem> = []
  for (const e of errors) {
    if (seen.has(e.instancePath) || above.has(e.instancePath)) continue
    seen.add(e.instancePath)
    const path = pointerParts(e.instancePath)
    const value = at(schema, path)
    const allowed = e.keyword === "enum" ? (e.params as { allowedValues?: ReadonlyArray<unknown> }).allowedValues : undefined
    // ajv's "must be object,boolean" read as words.
    const said = (e.message ?? "is not valid").replace(/^must be ([a-z]+(?:,[a-z]+)+)$/, (_, list: string) => `must be ${list.split(",").join(" or ")}`)
    // A list of schemas at `items` in 2020-12 is the draft-07 form (the attack's finding).
    const listAtItems = ajv === draft2020 && path[path.length - 1] === "items" && Array.isArray(value) ? ` (a list of schemas is draft-07's items; in 2020-12 it is prefixItems)` : ""
    const why = allowed !== undefined ? `must be one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}, not ${shown(value)}` : `${said}, not ${shown(value)}${listAtItems}`
    out.push({ why, path: keyPathIn(schema, path) })
  }
  return out
}

/** Keywords whose value is a map of schemas, a schema, a list of schemas (or, `items` in draft-07, either). */
// Not `definitions` nor `$defs`: ajv compiles a definition only where a `$ref` leads to it, and a
// problem there is then said in ajv's words (the walk says what ajv would refuse, no more).
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "dependentSchemas", "dependencies"])
const SCHEMA_VALUES = new Set(["additionalProperties", "additionalItems", "contains", "propertyNames", "if", "then", "else", "not", "unevaluatedItems", "unevaluatedProperties", "items", "contentSchema"])
const SCHEMA_LISTS = new Set(["allOf", "anyOf", "oneOf", "prefixItems", "items"])

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/**
 * Every keyword ajv does not know and every `format` it does not know, each at its own key, in
 * one walk of the schema's subschemas (ajv throws for the first of either, and says where for
 * neither: an unknown keyword was said at the schema's root). Values that are data (a property's
 * name, an `enum`, a `default`) are not walked.
 */
const unknownWords = (ajv: Ajv | Ajv2020, schema: unknown): ReadonlyArray<SchemaProblem> => {
  const out: Array<SchemaProblem> = []
  const formats = Object.keys(ajv.formats)
  const walk = (node: unknown, path: ReadonlyArray<string | number>): void => {
    if (!isMap(node)) return
    for (const [key, value] of Object.entries(node)) {
      const here = [...path, key]
      // As ajv's strict mode looks it up (`in`: a name an object inherits, `toString`, passes there too).
      if (!(key in keywordsOf(ajv))) {
        out.push({ why: unknownKeyword(ajv, key), path: here })
        continue
      }
      if (key === "format" && typeof value === "string" && !formats.includes(value)) {
        const hint = suggest(value, formats)
        out.push({ why: `is not a format svc knows (${JSON.stringify(value)})${hint === undefined ? "" : `; did you mean ${JSON.stringify(hint)}?`}`, path: here })
      }
      if (SCHEMA_MAPS.has(key) && isMap(value)) for (const [name, sub] of Object.entries(value)) walk(sub, [...here, name])
      if (SCHEMA_VALUES.has(key)) walk(value, here)
      if (SCHEMA_LISTS.has(key) && Array.isArray(value)) value.forEach((sub, i) => walk(sub, [...here, i]))
    }
  }
  walk(schema, [])
  return out
}

/** The keywords an instance knows: what its strict mode judges a schema's keys by (ajv's `checkUnknownRules`). */
const keywordsOf = (ajv: Ajv | Ajv2020): Record<string, unknown> => (ajv as unknown as { RULES: { keywords: Record<string, unknown> } }).RULES.keywords

const DRAFT7_KEYWORDS = Object.keys(keywordsOf(draft7))
const DRAFT2020_KEYWORDS = Object.keys(keywordsOf(draft2020))
const DIALECT_2020 = "https://json-schema.org/draft/2020-12/schema"

/**
 * Why a key is no keyword here: a keyword of the other dialect says which dialect names it (it
 * was "not a JSON Schema keyword; did you mean" itself), `$anchor` that ajv does not take it, any
 * other key the nearest keyword of this dialect.
 */
const unknownKeyword = (ajv: Ajv | Ajv2020, key: string): string => {
  const is2020 = ajv === draft2020
  // Keywords of 2019-09, which ajv's 2020-12 checker also takes.
  if (!is2020 && (key === "$recursiveRef" || key === "$recursiveAnchor")) return `is a JSON Schema 2019-09 keyword, and this schema is draft-07 (the default): in 2020-12 ($schema: "${DIALECT_2020}") use $dynamicRef and $dynamicAnchor`
  if (!is2020 && DRAFT2020_KEYWORDS.includes(key)) return `is a JSON Schema 2020-12 keyword, and this schema is draft-07 (the default): say $schema: "${DIALECT_2020}" to use it`
  if (is2020 && DRAFT7_KEYWORDS.includes(key)) return "is a JSON Schema draft-07 keyword, not a 2020-12 one: leave $schema out (draft-07) to use it"
  if (key === "$anchor") return "is a JSON Schema keyword that ajv, which checks schemas here, does not take: name the subschema with $defs and refer to it with $ref"
  const hint = suggest(key, is2020 ? DRAFT2020_KEYWORDS : DRAFT7_KEYWORDS)
  return `is not a JSON Schema keyword${hint === undefined ? "" : `; did you mean ${JSON.stringify(hint)}?`}`
}

/** The problems of one schema said at most; then how many more there are. */
export const MAX_SCHEMA_PROBLEMS = 100

/**
 * Every problem the meta-schema and the walk can name in a schema `ajv` refused, at its key (one
 * said at a key is not said again below it), at most MAX_SCHEMA_PROBLEMS and then how many more;
 * none when they name none (a $ref that leads nowhere, say: ajv's own words are said then).
 */
export const refusedSchemaProblems = (ajv: Ajv | Ajv2020, schema: unknown): Array<SchemaProblem> => {
  let named: Array<SchemaProblem>
  try {
    named = [...metaProblems(ajv, schema)]
  } catch {
    named = []
  }
  // A word at or below a key the meta-schema refused is not said again (each of its keys looked up once).
  const refused = new Set(named.map((p) => JSON.stringify(p.path)))
  const below = (word: SchemaProblem) => word.path.some((_, i) => refused.has(JSON.stringify(word.path.slice(0, i + 1))))
  for (const word of unknownWords(ajv, schema)) if (!below(word)) named.push(word)
  // A schema broken throughout is said in its first problems, and how many more there are
  // (the attack's generated schema printed 48,000 lines).
  if (named.length > MAX_SCHEMA_PROBLEMS) {
    named = [...named.slice(0, MAX_SCHEMA_PROBLEMS), { why: `${(named.length - MAX_SCHEMA_PROBLEMS).toLocaleString("en-US")} more problems not listed (the first ${MAX_SCHEMA_PROBLEMS} are)`, path: [] }]
  }
  return named
}

/** `unknownWords` for the dialect a schema names, for tests: the walk must agree with ajv's strict compile. */
export const unknownWordsIn = (schema: unknown, dialect: "draft-07" | "2020-12"): ReadonlyArray<SchemaProblem> => unknownWords(dialect === "2020-12" ? draft2020 : draft7, schema)
