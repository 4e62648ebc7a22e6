/**
 * Property tests of the manifest check (`svc bag check`'s core): random YAML text, random
 * values under real manifest keys, deep nesting, wrong types for every key, and long chains of
 * trait includes. Whatever comes in, the checker must not throw, must finish in bounded time,
 * and must answer either "valid" (no error, a decoded manifest) or a list of positioned
 * problems (each with a message, a key path, a line and a column, and then no manifest).
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import YAML from "yaml"
import type { BagListing } from "../../src/domain/manifest/Environment.js"
import { REPLACED_KEYS, RETIRED_KEYS, TOP_LEVEL_KEYS } from "../../src/domain/manifest/Manifest.js"
import { NamedBound, Trait } from "../../src/domain/manifest/schema/Grants.js"
import { AgentHook, McpServer } from "../../src/domain/manifest/schema/Integrations.js"
import { Job } from "../../src/domain/manifest/schema/Jobs.js"
import { Script, Service } from "../../src/domain/manifest/schema/Processes.js"
import { Schedule } from "../../src/domain/manifest/schema/Schedules.js"
import { Store } from "../../src/domain/manifest/schema/Stores.js"
import { Model, Vendor } from "../../src/domain/manifest/schema/Vendors.js"
import { check, listing, MINIMAL } from "../support/manifest.js"

/** One document may take this long at most: generous on a slow CI box, far below a hang. */
const BUDGET_MS = 5_000

/** The contract every answer keeps, whatever the input. */
const expectVerdict = (text: string, bagListing?: BagListing): void => {
  const started = performance.now()
  const result = check(text, bagListing)
  const elapsed = performance.now() - started
  expect(elapsed, `checking took ${Math.round(elapsed)} ms`).toBeLessThan(BUDGET_MS)

  const lineCount = text.split(/\r\n|\r|\n/).length
  for (const p of result.problems) {
    expect(["error", "warning"]).toContain(p.severity)
    expect(Array.isArray(p.path)).toBe(true)
  }
  const errorProblems = result.problems.filter((p) => p.severity === "error")
  expect(result.errors.length).toBe(errorProblems.length)
  if (result.errors.length === 0) {
    expect(result.manifest, "no error, so the manifest is decoded").toBeDefined()
    expect(typeof result.manifest?.name).toBe("string")
    expect(typeof result.manifest?.description).toBe("string")
  } else {
    expect(result.manifest, "an error, so no manifest").toBeUndefined()
    for (const e of result.errors) {
      expect(typeof e.message).toBe("string")
      expect(e.message.trim().length).toBeGreaterThan(0)
      expect(typeof e.path).toBe("string")
      expect(e.path.length).toBeGreaterThan(0)
      expect(Number.isInteger(e.line)).toBe(true)
      expect(Number.isInteger(e.column)).toBe(true)
      expect(e.line).toBeGreaterThanOrEqual(1)
      expect(e.column).toBeGreaterThanOrEqual(1)
      expect(e.line).toBeLessThanOrEqual(lineCount + 1)
    }
  }
  expect(result.lines.length).toBe(result.problems.length)
}

// ---------------------------------------------------------------------------------------------
// Generators

/** Keys a manifest really uses, at any depth: random maps are built mostly from these. */
const SECTION_SCHEMAS = {
  jobs: Job,
  schedules: Schedule,
  services: Service,
  scripts: Script,
  traits: Trait,
  bounds: NamedBound,
  stores: Store
} as const
const fieldsOf = (s: { readonly fields: object }): ReadonlyArray<string> => Object.keys(s.fields)
const NESTED_KEYS = [
  ...new Set([
    ...Object.values(SECTION_SCHEMAS).flatMap(fieldsOf),
    ...fieldsOf(Vendor),
    ...fieldsOf(Model),
    ...fieldsOf(McpServer),
    ...fieldsOf(AgentHook),
    "using",
    "main",
    "command",
    "constant",
    "agent",
    "barry",
    "repo",
    "path",
    "rev",
    "ref",
    "deniedTools",
    "bash",
    "denyPrograms",
    "type",
    "properties",
    "items",
    "required",
    "$schema",
    "$ref",
    "pattern",
    "local",
    "tunnel",
    "reach"
  ])
]
const ALL_TOP_KEYS = [...TOP_LEVEL_KEYS, ...RETIRED_KEYS, ...Object.keys(REPLACED_KEYS)]
/** Names that trip naive code: prototype members, empty, spaces, colons, unicode. */
const AWKWARD_KEYS = ["__proto__", "constructor", "toString", "hasOwnProperty", "", " ", "a:b", "x y", "NaN", "0", "é", "default"]

const key: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...NESTED_KEYS) },
  { weight: 2, arbitrary: fc.constantFrom(...ALL_TOP_KEYS) },
  { weight: 1, arbitrary: fc.constantFrom(...AWKWARD_KEYS) },
  { weight: 2, arbitrary: fc.string({ maxLength: 12 }) }
)

/** Strings the manifest gives meaning to, so random values sometimes hit the real branches. */
const MEANINGFUL = [
  "node",
  "process",
  "action",
  "a.js",
  "src/a.mjs",
  "../out",
  "/etc/passwd",
  "C:\\x",
  "5m",
  "2m",
  "1d",
  "90",
  "30s",
  "0",
  "-5",
  "login",
  "2026-12-01T09:00:00+01:00",
  "2026-02-30T09:00:00Z",
  "* * * * *",
  "99 * * * *",
  "*/0 * * * *",
  "UTC",
  "Mars/Base",
  "Europe/Paris",
  "KEY=value",
  "=",
  "job-a",
  "other:job-a@1.0",
  "job-a@2",
  "identity",
  "sqlite",
  "read",
  "readwrite",
  "http",
  "terraform",
  "enabled",
  "deferred",
  "completion",
  "default",
  "vault",
  "object",
  "string",
  "${API_KEY}",
  "(a+)+$",
  "demo:t"
]

const scalar: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.constantFrom(...MEANINGFUL),
  fc.string({ maxLength: 20 }),
  fc.string({ unit: "binary", maxLength: 20 })
)

/** A plain object with own, enumerable keys, even `__proto__` (as YAML would produce). */
const objectOf = (entries: ReadonlyArray<readonly [string, unknown]>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const [k, v] of entries) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true })
  return out
}

const { value: yamlValue } = fc.letrec<{ value: unknown; list: Array<unknown>; map: Record<string, unknown>; ref: Record<string, unknown> }>(
  (tie) => ({
    value: fc.oneof({ depthSize: "small", withCrossShrink: true }, scalar, tie("list"), tie("map"), tie("ref")),
    list: fc.array(tie("value"), { maxLength: 4 }),
    map: fc.array(fc.tuple(key, tie("value")), { maxLength: 5 }).map(objectOf),
    // `{constant: X}`: substituted before validation, so it may stand anywhere.
    ref: fc.oneof(fc.constantFrom("c", "other", "demo:c", "nope:c", ""), scalar).map((c) => ({ constant: c }))
  })
)

/** A realistic valid manifest to mutate: every section that has a cross-key rule. */
const BASE: Record<string, unknown> = {
  name: "demo",
  description: "A demo bag",
  constants: { c: ["rm"], port: 8080 },
  jobs: {
    "job-a": {
      version: "1.0",
      runs: { using: "node", main: "jobs/a.js" },
      input_schema: { type: "object", properties: { n: { type: "integer" } } },
      timeout: "5m"
    }
  },
  schedules: { nightly: { cron: "0 3 * * *", job: "job-a", inputs: { n: 1 } } },
  services: { web: { description: "Web", entry: "web.js", serves: "http", health: "/health" } },
  scripts: { tidy: { description: "Tidy", command: "tidy" } },
  traits: { t: { description: "T", includes: ["u"], bounds: ["b"] }, u: { description: "U" } },
  bounds: { b: { description: "B", bound: { deniedTools: ["x"], bash: { denyPrograms: { constant: "c" } } } } },
  stores: { main: { owned_by: "identity", engine: "sqlite", migrations: "migrations" } }
}
const BASE_FILES = ["jobs/a.js", "web.js", "migrations/001.sql"]

const stringifyOptions = fc.record({
  collectionStyle: fc.constantFrom("any", "block", "flow") as fc.Arbitrary<"any" | "block" | "flow">,
  lineWidth: fc.constantFrom(0, 20, 80),
  aliasDuplicateObjects: fc.boolean()
})

const toYaml = (value: unknown, options: YAML.ToStringOptions & YAML.CreateNodeOptions): string => YAML.stringify(value, options) ?? ""

/** Set `value` at `path` inside a copy of `doc`, creating maps on the way. */
const setIn = (doc: unknown, path: ReadonlyArray<string>, value: unknown): unknown => {
  if (path.length === 0) return value
  const [head, ...rest] = path as [string, ...Array<string>]
  const base: Record<string, unknown> = typeof doc === "object" && doc !== null && !Array.isArray(doc) ? { ...(doc as Record<string, unknown>) } : {}
  const next = Object.prototype.hasOwnProperty.call(base, head) ? base[head] : undefined
  Object.defineProperty(base, head, { value: setIn(next, rest, value), enumerable: true, writable: true, configurable: true })
  return base
}

/** What sits at the bottom of deep nesting: a plain value, or a YAML fault that is reported by key path. */
const LEAVES = ["x", "{k: 1, k: 2}", "*nope", "&a [1, *a]", "{constant: nope}"] as const

/** Text nested `depth` levels deep, in one of the YAML spellings of nesting. */
const nested = (
  depth: number,
  kind: "flow-list" | "flow-map" | "mixed" | "block-list" | "block-map" | "schema",
  indent: number,
  leaf: string = "x"
): string => {
  switch (kind) {
    case "flow-list":
      return "[".repeat(depth) + leaf + "]".repeat(depth)
    case "flow-map":
      return "{a: ".repeat(depth) + leaf + "}".repeat(depth)
    case "mixed":
      return "[{k: ".repeat(depth) + leaf + "}]".repeat(depth)
    case "schema":
      return "{type: array, items: ".repeat(depth) + "{}" + "}".repeat(depth)
    case "block-list": {
      const lines: Array<string> = []
      for (let i = 0; i < depth; i++) lines.push(" ".repeat(indent + 2 * i) + "-")
      return "\n" + lines.join("\n") + " " + leaf
    }
    case "block-map": {
      const lines: Array<string> = []
      for (let i = 0; i < depth; i++) lines.push(" ".repeat(indent + 2 * i) + "k:")
      return "\n" + lines.join("\n") + " " + leaf
    }
  }
}

// ---------------------------------------------------------------------------------------------

describe("manifest check: never throws, never hangs, always a verdict", () => {
  it("arbitrary strings as YAML text", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: "binary", maxLength: 200 }), fc.string({ unit: "grapheme", maxLength: 100 })),
        fc.boolean(),
        (text, prefixed) => expectVerdict(prefixed ? MINIMAL + text : text)
      ),
      { numRuns: 300 }
    )
  })

  it("YAML token soup: anchors, aliases, tags, flow and block syntax, directives", () => {
    const token = fc.constantFrom(
      "name: demo\n",
      "description: d\n",
      "jobs:\n",
      "  job-a:\n",
      "    runs: {using: node, main: a.js}\n",
      "schedules:\n",
      "constants:\n",
      "{constant: c}",
      "\n",
      " ",
      "  ",
      "\t",
      "- ",
      ": ",
      "? ",
      "{",
      "}",
      "[",
      "]",
      ",",
      "&a ",
      "*a",
      "<<: *a\n",
      "!!str ",
      "!!map ",
      "!!seq ",
      "!!binary ",
      "!!set ",
      "!custom ",
      "|\n",
      ">-\n",
      "'",
      '"',
      "# c\n",
      "---\n",
      "...\n",
      "%YAML 1.2\n",
      "%TAG ! tag:x,2000:\n",
      "null",
      "~",
      ".inf",
      "-.inf",
      ".nan",
      "0x1F",
      "0o17",
      "1e400",
      "true",
      "\u0000",
      "\uFEFF",
      "\u2028",
      "\\",
      "é"
    )
    fc.assert(
      fc.property(fc.array(token, { maxLength: 40 }), (tokens) => expectVerdict(tokens.join(""))),
      { numRuns: 400 }
    )
  })

  it("random values under random manifest keys, serialized with yaml", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom(...ALL_TOP_KEYS, ...AWKWARD_KEYS), yamlValue), { maxLength: 6 }),
        fc.boolean(),
        stringifyOptions,
        fc.boolean(),
        (entries, withBase, options, withListing) => {
          let doc: unknown = withBase ? BASE : {}
          for (const [k, v] of entries) doc = setIn(doc, [k], v)
          expectVerdict(toYaml(doc, options), withListing ? listing(BASE_FILES, ["skills/s"]) : undefined)
        }
      ),
      { numRuns: 250 }
    )
  })

  it("random values at random paths inside a valid manifest", () => {
    const section = fc.constantFrom(...(Object.keys(SECTION_SCHEMAS) as Array<keyof typeof SECTION_SCHEMAS>))
    const path = section.chain((s) =>
      fc.tuple(
        fc.constant(s),
        fc.constantFrom(...Object.keys(BASE[s] as object), "new-entry"),
        fc.array(fc.constantFrom(...fieldsOf(SECTION_SCHEMAS[s]), ...NESTED_KEYS.slice(0, 20)), { minLength: 0, maxLength: 3 })
      )
    )
    fc.assert(
      fc.property(path, yamlValue, stringifyOptions, ([s, entry, rest], value, options) => {
        expectVerdict(toYaml(setIn(BASE, [s, entry, ...rest], value), options), listing(BASE_FILES))
      }),
      { numRuns: 250 }
    )
  })

  it("the valid base manifest is valid (sanity for the mutations above)", () => {
    const result = check(toYaml(BASE, {}), listing(BASE_FILES))
    expect(result.lines).toEqual([])
    expect(result.manifest?.name).toBe("demo")
  })

  it("deep nesting, up to 2,500 levels, in flow and block style, anywhere in the manifest", () => {
    const place = fc.constantFrom(
      (v: string) => v.replace(/^\n/, ""),
      (v: string) => `${MINIMAL}constants:\n  deep: ${v}\n`,
      (v: string) => `${MINIMAL}jobs: ${v}\n`,
      (v: string) => `${MINIMAL}services:\n  s: ${v}\n`,
      (v: string) => `${MINIMAL}bounds:\n  b:\n    description: d\n    bound:\n      other: ${v}\n`,
      (v: string) => `${MINIMAL}schedules:\n  s:\n    every: 5m\n    action: ${v}\n`,
      (v: string) => `${MINIMAL}jobs:\n  j:\n    runs: {using: node, main: a.js}\n    input_schema: ${v}\n`
    )
    const kind = fc.constantFrom("flow-list", "flow-map", "mixed", "block-list", "block-map", "schema") as fc.Arbitrary<
      Parameters<typeof nested>[1]
    >
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2_500 }), kind, place, fc.constantFrom(...LEAVES), (depth, k, at, leaf) => {
        // Block nesting grows as depth squared in text; keep it to a realistic size.
        const d = k.startsWith("block") ? Math.min(depth, 1_200) : depth
        expectVerdict(at(nested(d, k, 4, k === "schema" ? "{}" : leaf)))
      }),
      { numRuns: 60 }
    )
  })

  it("deep nesting at fixed depths, including 2,000 levels", () => {
    for (const depth of [10, 1_000, 2_000]) {
      for (const k of ["flow-list", "flow-map", "mixed"] as const) {
        for (const leaf of LEAVES) {
          expectVerdict(nested(depth, k, 0, leaf))
          expectVerdict(`${MINIMAL}constants:\n  deep: ${nested(depth, k, 0, leaf)}\n`)
          expectVerdict(`${MINIMAL}traits: ${nested(depth, k, 0, leaf)}\n`)
        }
      }
    }
    // A job's JSON Schema that deep: ajv's recursion overflowed the stack, and the check threw.
    for (const depth of [830, 2_000]) {
      expectVerdict(`${MINIMAL}jobs:\n  j:\n    runs: {using: node, main: a.js}\n    input_schema: ${nested(depth, "schema", 0)}\n`)
    }
  })

  it("wrong types for every top-level key", () => {
    const wrong = fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), yamlValue)
    fc.assert(
      fc.property(fc.constantFrom(...ALL_TOP_KEYS), wrong, fc.boolean(), (k, v, withBase) => {
        expectVerdict(toYaml(setIn(withBase ? BASE : { name: "demo", description: "d" }, [k], v), {}))
      }),
      { numRuns: 300 }
    )
    // And exhaustively: each key, each kind of value.
    const kinds: ReadonlyArray<unknown> = [null, true, 0, -1.5, "", "text", [], [1, "a"], {}, { x: 1 }, [[[]]], { constant: "nope" }]
    for (const k of ALL_TOP_KEYS) for (const v of kinds) expectVerdict(toYaml(setIn(BASE, [k], v), {}))
  })

  it("long chains and cycles of trait includes", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5_000 }), fc.boolean(), (n, cyclic) => {
        const lines = [MINIMAL, "traits:\n"]
        for (let i = 0; i < n; i++) {
          const next = i + 1 < n ? i + 1 : cyclic ? 0 : undefined
          lines.push(`  t${i}: {description: d${next === undefined ? "" : `, includes: [t${next}]`}}\n`)
        }
        expectVerdict(lines.join(""))
      }),
      { numRuns: 3, examples: [[5_000, true]] }
    )
  })

  it("aliases inside their own anchor (a value that contains itself)", () => {
    const cases = [
      `${MINIMAL}bounds: &a [1, *a]\n`,
      `${MINIMAL}constants:\n  s: &a {type: object, x: *a}\njobs:\n  j:\n    runs: {using: node, main: a.js}\n    input_schema: {constant: s}\n`,
      "&r {name: demo, description: d, self: *r}\n",
      `${MINIMAL}jobs: &j\n  a:\n    runs: {using: node, main: a.js}\n    more: *j\n`
    ]
    for (const text of cases) {
      expectVerdict(text)
      expect(check(text).errors.some((e) => e.message.includes("contains itself"))).toBe(true)
    }
    // Shared (not cyclic) aliases stay fine.
    const shared = check(`${MINIMAL}constants:\n  a: &x [1]\n  b: *x\n  c: *x\n`)
    expect(shared.lines).toEqual([])
  })
})
