/**
 * The format validators the manifest check is given (domain `FormatValidators`), backed by
 * well-kept libraries: croner for cron expressions, Intl for IANA zones, ajv for JSON Schema.
 */
import * as vm from "node:vm"
import type { ErrorObject, ValidateFunction } from "ajv"
import { Cron } from "croner"
import type { FormatValidators } from "../../domain/manifest/Environment.js"
import { depthOf } from "../../domain/runs/Values.js"
import { draft2020, draft7, pointerParts, refusedSchemaProblems, type SchemaProblem } from "./SchemaProblems.js"

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

type Compiled =
  | { readonly ok: true; readonly validate: ValidateFunction; readonly patterns: boolean }
  | { readonly ok: false; readonly problems: readonly [SchemaProblem, ...Array<SchemaProblem>] }

/**
 * How long checking one value against a schema with a `pattern` (or `patternProperties`) may
 * take. A pattern that backtracks (`^(a+)+$`) took 18 s on 31 characters, hours on 40, and the
 * owner, whose event loop checks a run's input and a worker's result, answered nothing meanwhile.
 * The check runs under a watchdog (node:vm's timeout, which stops a regular expression mid-match)
 * and a value it stops is refused, saying why.
 */
export const PATTERN_CHECK_MS = 1_000
export const PATTERN_STOPPED = `checking it against the schema was stopped after ${PATTERN_CHECK_MS / 1000} s: a pattern of the schema backtracks too much on this value (nested repetition such as (a+)+ can take hours); rewrite the pattern`

const sandbox = vm.createContext({ validate: undefined as unknown, value: undefined as unknown })
const callValidate = new vm.Script("validate(value)")
/** `validate(value)`, stopped after PATTERN_CHECK_MS: undefined when stopped. */
const watched = (validate: ValidateFunction, value: unknown): boolean | undefined => {
  sandbox["validate"] = validate
  sandbox["value"] = value
  try {
    return callValidate.runInContext(sandbox, { timeout: PATTERN_CHECK_MS }) === true
  } catch (e) {
    if ((e as { code?: unknown }).code === "ERR_SCRIPT_EXECUTION_TIMEOUT") return undefined
    throw e
  } finally {
    sandbox["validate"] = undefined
    sandbox["value"] = undefined
  }
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

const ASYNC = "svc checks a value as it arrives, at once: an asynchronous schema ($async: true, for ajv's asynchronous keywords, which svc does not define) is not taken"

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
        const validate = ajv.compile(schema as object)
        // ajv answers a schema that says `$async: true` with a promise, which rejects: svc checks a
        // value where it arrives, at once, and a rejection nobody awaited stopped the owner.
        result = (validate as { readonly $async?: unknown }).$async === true ? { ok: false, problems: [{ why: ASYNC, path: ["$async"] }] } : { ok: true, validate, patterns: /"pattern(Properties)?":/.test(key) }
      } catch (e) {
        // What ajv threw is its first problem: every one that can be named is said, at its key;
        // ajv's own text only when none can be.
        const named = refusedSchemaProblems(ajv, schema)
        const [first, ...rest] = named
        const thrown = e instanceof Error ? e.message : String(e)
        // ajv's words for `$async: true` below the root ("async schema in sync schema") say it in its own terms.
        const why = /^async schema in sync schema/.test(thrown) ? `a subschema says $async: true; ${ASYNC}` : thrown
        result = { ok: false, problems: first !== undefined ? [first, ...rest] : [{ why, path: [] }] }
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
    const valid = result.patterns ? watched(result.validate, value) : result.validate(value)
    if (valid === undefined) return PATTERN_STOPPED
    if (valid) return undefined
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
