/**
 * The format validators the manifest check is given (domain `FormatValidators`), backed by
 * well-kept libraries: croner for cron expressions, Intl for IANA zones, ajv for JSON Schema.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv"
import { Ajv2020 } from "ajv/dist/2020.js"
import addFormatsModule from "ajv-formats"
import { Cron } from "croner"
import type { FormatValidators } from "../../domain/manifest/Environment.js"
import { suggest } from "../../domain/manifest/internal/suggest.js"
import { depthOf } from "../../domain/runs/Values.js"

const addFormats = addFormatsModule as unknown as (ajv: Ajv | Ajv2020) => void

const zoneCache = new Map<string, boolean>()
const IANA_SHAPE = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/

export const isTimeZone = (zone: string): boolean => {
  let known = zoneCache.get(zone)
  if (known === undefined) {
    try {
      known = IANA_SHAPE.test(zone) && new Intl.DateTimeFormat("en-US", { timeZone: zone }).resolvedOptions().timeZone !== undefined
    } catch {
      known = false
    }
    if (zoneCache.size < 10_000) zoneCache.set(zone, known)
  }
  return known
}

export const cronProblem = (expression: string): string | undefined => {
  try {
    new Cron(expression, { paused: true })
    return undefined
  } catch (e) {
    return e instanceof Error ? e.message.replace(/^CronPattern: /, "") : String(e)
  }
}

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
const draft7 = makeAjv(new Ajv(options))
const draft2020 = makeAjv(new Ajv2020(options))

/** A JSON pointer's keys (`/properties/a~1b` is ["properties", "a/b"]); the root's is none. */
const pointerParts = (pointer: string): ReadonlyArray<string> =>
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

type SchemaProblem = { readonly why: string; readonly path: ReadonlyArray<string | number> }
type Compiled = { readonly ok: true; readonly validate: ValidateFunction } | { readonly ok: false; readonly problems: readonly [SchemaProblem, ...Array<SchemaProblem>] }

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
    const why = allowed !== undefined ? `must be one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}, not ${JSON.stringify(value)}` : `${said}, not ${JSON.stringify(value)}${listAtItems}`
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

const compiled = new Map<string, Compiled>()

/** The problems of one schema said at most; then how many more there are. */
export const MAX_SCHEMA_PROBLEMS = 100

/**
 * How deep a schema may nest. ajv compiles and checks a schema by recursion, and a schema some
 * hundreds of levels deep overflowed the stack (an error at best, a crash of `svc bag check` at
 * worst); real schemas nest a few levels.
 */
export const MAX_SCHEMA_DEPTH = 64

/** The meta-schemas ajv here knows (what `$schema` may name): draft-07, the default, and 2020-12. */
const DIALECTS: ReadonlyArray<readonly [string, { readonly dialect: "draft-07" | "2020-12" }]> = [
  ["http://json-schema.org/draft-07/schema", { dialect: "draft-07" }],
  ["https://json-schema.org/draft/2020-12/schema", { dialect: "2020-12" }]
]

/**
 * The dialect `$schema` names (none: draft-07), or why it names none svc checks: ajv throws for
 * a meta-schema it was not given (draft-04, 2019-09, any other URL), which crashed the check.
 */
const dialectOf = (meta: unknown): { readonly dialect: "draft-07" | "2020-12" } | string => {
  if (meta === undefined) return { dialect: "draft-07" }
  if (typeof meta !== "string") return `must be a string naming the JSON Schema dialect, not ${JSON.stringify(meta)}`
  const known = DIALECTS.find(([url]) => meta.replace(/#$/, "") === url)
  return known?.[1] ?? `svc checks JSON Schema draft-07 ("http://json-schema.org/draft-07/schema#", also when $schema is left out) and 2020-12 ("https://json-schema.org/draft/2020-12/schema"), not ${JSON.stringify(meta)}`
}

const compile = (schema: unknown): Compiled => {
  const depth = depthOf(schema, MAX_SCHEMA_DEPTH)
  if (depth > MAX_SCHEMA_DEPTH) return { ok: false, problems: [{ why: `it nests more than ${MAX_SCHEMA_DEPTH} levels deep (objects and arrays within each other); at most ${MAX_SCHEMA_DEPTH} are taken`, path: [] }] }
  const key = JSON.stringify(schema)
  let result = compiled.get(key)
  if (result === undefined) {
    const meta = typeof schema === "object" && schema !== null ? (schema as Record<string, unknown>)["$schema"] : undefined
    const dialect = dialectOf(meta)
    if (typeof dialect === "string") {
      result = { ok: false, problems: [{ why: dialect, path: ["$schema"] }] }
    } else {
      const ajv = dialect.dialect === "2020-12" ? draft2020 : draft7
      try {
        result = { ok: true, validate: ajv.compile(schema as object) }
      } catch (e) {
        // What ajv threw is its first problem: every one the meta-schema and the walk can name
        // is said, at its key (one said at a key is not said again below it); ajv's own text
        // only when they name none (a $ref that leads nowhere, say).
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
        const [first, ...rest] = named
        result = { ok: false, problems: first !== undefined ? [first, ...rest] : [{ why: e instanceof Error ? e.message : String(e), path: [] }] }
      }
    }
    if (compiled.size >= 1_000) compiled.delete(compiled.keys().next().value!)
    compiled.set(key, result)
  }
  return result
}

/** `unknownWords` for the dialect a schema names, for tests: the walk must agree with ajv's strict compile. */
export const unknownWordsIn = (schema: unknown, dialect: "draft-07" | "2020-12"): ReadonlyArray<SchemaProblem> => unknownWords(dialect === "2020-12" ? draft2020 : draft7, schema)

export const formatValidators: FormatValidators = {
  cron: cronProblem,
  isTimeZone,
  jsonSchema: (schema) => {
    const result = compile(schema)
    return result.ok ? [] : result.problems.map((p) => ({ path: p.path, message: p.why }))
  },
  validate: (schema, value) => {
    const result = compile(schema)
    if (!result.ok) return result.problems.map((p) => p.why).join("; ")
    if (result.validate(value)) return undefined
    return describeErrors(result.validate.errors ?? [], "inputs")
  }
}

/** `/items/0/name` as `inputs.items[0].name`: where in the value a problem is. */
const pathOf = (root: string, pointer: string): string =>
  root + pointerParts(pointer).map((part) => (/^\d+$/.test(part) ? `[${part}]` : /^[A-Za-z_$][\w$]*$/.test(part) ? `.${part}` : `[${JSON.stringify(part)}]`)).join("")

/**
 * ajv's errors in words that name what is wrong and where: the property the schema does not
 * allow, the one missing, the values allowed (ajv's own text says "must NOT have additional
 * properties" without naming the property). One problem per error, joined by "; ".
 */
export const describeErrors = (errors: ReadonlyArray<ErrorObject>, root: string): string =>
  [
    ...new Set(
      errors.map((e) => {
        const at = pathOf(root, e.instancePath)
        const p = e.params as Record<string, unknown>
        switch (e.keyword) {
          case "additionalProperties":
            return `${at} has a property ${JSON.stringify(p["additionalProperty"])} the schema does not allow`
          case "required":
            return `${at} lacks the required property ${JSON.stringify(p["missingProperty"])}`
          case "enum":
            return `${at} must be one of ${(p["allowedValues"] as ReadonlyArray<unknown>).map((v) => JSON.stringify(v)).join(", ")}`
          case "const":
            return `${at} must be ${JSON.stringify(p["allowedValue"])}`
          default:
            return `${at} ${e.message ?? "is not valid"}`
        }
      })
    )
  ].join("; ")
