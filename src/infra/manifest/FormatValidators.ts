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
 * Where a schema breaks its meta-schema, and how: the key (`properties.sha256.type`) and, for a
 * value outside a set, the set and the value. Of ajv's errors the deepest is said (the first
 * of those): where the meta-schema allows alternatives (`items`: a schema or a list of them),
 * the first error is the first alternative's complaint about the whole value ("must be
 * object,boolean" for a list whose second schema misspells a type).
 */
const metaProblem = (ajv: Ajv | Ajv2020, schema: unknown): SchemaProblem | undefined => {
  if (ajv.validateSchema(schema as object) === true) return undefined
  const errors = ajv.errors ?? []
  const depth = (e: ErrorObject) => (e.instancePath === "" ? 0 : e.instancePath.split("/").length)
  const first = errors.reduce<ErrorObject | undefined>((best, e) => (best === undefined || depth(e) > depth(best) ? e : best), undefined)
  if (first === undefined) return undefined
  const path = pointerParts(first.instancePath)
  const value = at(schema, path)
  const allowed = first.keyword === "enum" ? (first.params as { allowedValues?: ReadonlyArray<unknown> }).allowedValues : undefined
  const why = allowed !== undefined ? `must be one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}, not ${JSON.stringify(value)}` : `${first.message ?? "is not valid"}, not ${JSON.stringify(value)}`
  return { why, path: keyPathIn(schema, path) }
}
const compiled = new Map<string, Compiled>()

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

/**
 * ajv's refusal of a format it does not know, said at the `format` key with the nearest known
 * one: its own text ("unknown format ... ignored in schema at path ...") said "ignored" of what
 * it refused, at the schema's root.
 */
const unknownFormat = (ajv: Ajv | Ajv2020, schema: unknown, message: string): SchemaProblem | undefined => {
  const m = /^unknown format "([^"]*)" ignored in schema at path "#([^"]*)"$/.exec(message)
  if (m === null) return undefined
  const known = Object.keys(ajv.formats)
  const hint = suggest(m[1]!, known)
  // The path is a URI fragment: its parts are percent-encoded (`a%20b` for the property "a b").
  let pointer: string
  try {
    pointer = decodeURIComponent(m[2]!)
  } catch {
    pointer = m[2]!
  }
  return { why: `is not a format svc knows (${JSON.stringify(m[1])})${hint === undefined ? "" : `; did you mean ${JSON.stringify(hint)}?`}`, path: [...keyPathIn(schema, pointerParts(pointer)), "format"] }
}

/**
 * Every unknown format in `schema`, not only the one ajv threw for first: a second compile by an
 * instance that logs unknown formats instead of throwing (`strictSchema: false`), made only when
 * a schema has one. Its other strict checks are off too, so it says nothing else.
 */
const lenient = { "draft-07": undefined as Ajv | undefined, "2020-12": undefined as Ajv2020 | undefined }
const warned: Array<string> = []
const logger = { log: () => {}, warn: (message: unknown) => void warned.push(String(message)), error: () => {} }
const everyUnknownFormat = (dialect: "draft-07" | "2020-12", schema: object): ReadonlyArray<SchemaProblem> => {
  const ajv =
    dialect === "2020-12"
      ? (lenient["2020-12"] ??= makeAjv(new Ajv2020({ ...options, strictSchema: false, logger })))
      : (lenient["draft-07"] ??= makeAjv(new Ajv({ ...options, strictSchema: false, logger })))
  warned.length = 0
  try {
    ajv.compile(schema)
  } catch {
    // Whatever else is wrong was said by the strict compile.
  } finally {
    // ajv keeps what it compiled by the schema object: a later call must compile (and warn) again.
    ajv.removeSchema(schema)
  }
  return warned.flatMap((message) => unknownFormat(ajv, schema, message) ?? [])
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
        let meta: ReturnType<typeof metaProblem>
        try {
          meta = metaProblem(ajv, schema)
        } catch {
          meta = undefined
        }
        const message = e instanceof Error ? e.message : String(e)
        const formats = meta === undefined && unknownFormat(ajv, schema, message) !== undefined ? everyUnknownFormat(dialect.dialect, schema as object) : []
        const [first, ...rest] = formats
        result = { ok: false, problems: meta !== undefined ? [meta] : first !== undefined ? [first, ...rest] : [{ why: message, path: [] }] }
      }
    }
    if (compiled.size >= 1_000) compiled.delete(compiled.keys().next().value!)
    compiled.set(key, result)
  }
  return result
}

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
