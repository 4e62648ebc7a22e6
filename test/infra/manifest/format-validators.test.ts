/** A value checked against a job's JSON Schema: each problem says what is wrong and where. */
import { describe, expect, it } from "vitest"
import { Ajv } from "ajv"
import { Ajv2020 } from "ajv/dist/2020.js"
import addFormatsModule from "ajv-formats"
import fc from "fast-check"
import { depthOf } from "../../../src/domain/runs/Values.js"
import { formatValidators, MAX_SCHEMA_DEPTH, PATTERN_CHECK_MS, PATTERN_STOPPED } from "../../../src/infra/manifest/FormatValidators.js"
import { MAX_SCHEMA_PROBLEMS, unknownWordsIn } from "../../../src/infra/manifest/SchemaProblems.js"

const schema = {
  type: "object",
  required: ["name", "items"],
  additionalProperties: false,
  properties: {
    name: { type: "string" },
    mode: { enum: ["fast", "slow"] },
    kind: { const: "report" },
    items: { type: "array", items: { type: "object", properties: { "file name": { type: "string" }, size: { type: "integer" } }, additionalProperties: false } }
  }
}

describe("a value checked against a JSON Schema", () => {
  it("passes a value that matches", () => {
    expect(formatValidators.validate(schema, { name: "a", items: [] })).toBeUndefined()
  })

  it("names the property the schema does not allow, the one missing, and the values allowed, with where each is", () => {
    expect(formatValidators.validate(schema, { nam: "a", items: [] })).toBe('inputs lacks the required property "name"; inputs has a property "nam" the schema does not allow')
    expect(formatValidators.validate(schema, { name: "a", mode: "medium", kind: "x", items: [] })).toBe('inputs.mode must be one of "fast", "slow"; inputs.kind must be "report"')
    expect(formatValidators.validate(schema, { name: 1, items: [{ "file name": 2, size: 1.5, extra: true }] })).toBe(
      'inputs.name must be string; inputs.items[0] has a property "extra" the schema does not allow; inputs.items[0]["file name"] must be string; inputs.items[0].size must be integer'
    )
  })
})

describe("a schema nested deep", () => {
  const nestedArrays = (levels: number): unknown => {
    let schema: unknown = {}
    for (let i = 1; i < levels; i++) schema = { type: "array", items: schema }
    return schema
  }

  it("counts how deep a value nests, without recursion", () => {
    expect(depthOf("x", 10)).toBe(0)
    expect(depthOf({}, 10)).toBe(1)
    expect(depthOf({ a: [1, { b: {} }] }, 10)).toBe(4)
    expect(depthOf(nestedArrays(100_000), 10)).toBe(11)
  })

  it("is taken up to the limit and refused past it, at any depth, saying why (ajv's recursion overflowed the stack)", () => {
    expect(formatValidators.jsonSchema(nestedArrays(MAX_SCHEMA_DEPTH))).toEqual([])
    for (const levels of [MAX_SCHEMA_DEPTH + 1, 830, 2_500, 20_000]) {
      expect(formatValidators.jsonSchema(nestedArrays(levels))).toEqual([
        {
          path: [],
          message: `it nests more than ${MAX_SCHEMA_DEPTH} levels deep (objects and arrays within each other); at most ${MAX_SCHEMA_DEPTH} are taken`
        }
      ])
      expect(formatValidators.validate(nestedArrays(levels), [])).toMatch(/nests more than/)
    }
  })
})

describe("a schema's unknown keywords and formats", () => {
  // A schema tree of keywords in their places, misspelt ones and data that looks like keywords
  // (a property named "tpye", an enum value holding one) among them.
  // Each node is clean but for, now and then, one misspelt keyword or unknown format: so that
  // a tree's only problem is often deep in it.
  const clean = {
    type: fc.constant("string"),
    title: fc.constant("t"),
    format: fc.constantFrom("email", "date-time", "uri"),
    enum: fc.constant([{ tpye: 1, format: "nope" }]),
    default: fc.constant({ propertiez: 1 })
  }
  const wrong = fc.constantFrom<Record<string, unknown>>({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, { tpye: "object" }, { propertiez: {} }, { discriminator: "d" }, { format: "emial" }, { format: "nope" })
  const withWrong = (node: fc.Arbitrary<Record<string, unknown>>) => fc.tuple(node, wrong).map(([n, w]) => ({ ...n, ...w }))
  const node: fc.Memo<Record<string, unknown>> = fc.memo((n) =>
    n <= 1
      ? withWrong(fc.record(clean, { requiredKeys: [] }))
      : withWrong(
          fc.record(
            {
              ...clean,
              properties: fc.dictionary(fc.constantFrom("a", "tpye", "format", "b c"), node(n - 1), { maxKeys: 2 }),
              items: node(n - 1),
              anyOf: fc.array(node(n - 1), { minLength: 1, maxLength: 2 }),
              not: node(n - 1),
              definitions: fc.dictionary(fc.constantFrom("x", "propertiez"), node(n - 1), { maxKeys: 2 })
            },
            { requiredKeys: [] }
          )
        )
  )
  const addFormats = addFormatsModule as unknown as (ajv: Ajv | Ajv2020) => void
  const strict = { strictSchema: true, strictTypes: false, strictTuples: false, strictRequired: false, allErrors: true, addUsedSchema: false } as const
  const dialects = [
    ["draft-07", new Ajv(strict)],
    ["2020-12", new Ajv2020(strict)]
  ] as const
  for (const [, ajv] of dialects) addFormats(ajv)

  it.each(dialects)("are found by the walk exactly when ajv's strict compile refuses one (%s)", (dialect, ajv) => {
    fc.assert(
      fc.property(node(3), (schema) => {
        const found = unknownWordsIn(schema, dialect)
        let refused: string | undefined
        try {
          ajv.compile(schema)
        } catch (e) {
          refused = (e as Error).message
        } finally {
          ajv.removeSchema(schema)
        }
        // ajv refuses for the first it meets, and says where for neither; the walk finds them all.
        expect(found.length > 0, `${JSON.stringify(schema)}: ajv said ${refused}`).toBe(refused !== undefined && /unknown (keyword|format)/.test(refused))
        if (refused !== undefined) {
          const word = /unknown (?:keyword|format):? "([^"]*)"/.exec(refused)?.[1]
          expect(word, refused).toBeDefined()
          expect(found.some((p) => p.path[p.path.length - 1] === word || p.why.includes(`"${word}"`))).toBe(true)
        }
      }),
      { numRuns: 300 }
    )
  })
})

describe("what is said of a schema's problems", () => {
  it("a keyword of the other dialect says which dialect names it; $anchor that ajv does not take it; a name an object inherits is taken, as ajv takes it", () => {
    const said = (schema: Record<string, unknown>) => formatValidators.jsonSchema({ type: "array", ...schema, tpye: 1 }).map((p) => [p.path.join("."), p.message])
    expect(said({ prefixItems: [{ type: "string" }] })).toEqual([
      ["prefixItems", 'is a JSON Schema 2020-12 keyword, and this schema is draft-07 (the default): say $schema: "https://json-schema.org/draft/2020-12/schema" to use it'],
      ["tpye", 'is not a JSON Schema keyword; did you mean "type"?']
    ])
    const in2020 = { $schema: "https://json-schema.org/draft/2020-12/schema" }
    expect(said({ ...in2020, additionalItems: false })).toContainEqual(["additionalItems", "is a JSON Schema draft-07 keyword, not a 2020-12 one: leave $schema out (draft-07) to use it"])
    expect(said({ ...in2020, $anchor: "a" })).toContainEqual(["$anchor", "is a JSON Schema keyword that ajv, which checks schemas here, does not take: name the subschema with $defs and refer to it with $ref"])
    expect(said({ toString: 1, constructor: 2 })).toEqual([["tpye", 'is not a JSON Schema keyword; did you mean "type"?']])
    // The second attack: 2019-09's keywords named as such; a list at items in 2020-12 said to be draft-07's form, in words.
    expect(said({ $recursiveRef: "#" })).toContainEqual([
      "$recursiveRef",
      'is a JSON Schema 2019-09 keyword, and this schema is draft-07 (the default): in 2020-12 ($schema: "https://json-schema.org/draft/2020-12/schema") use $dynamicRef and $dynamicAnchor'
    ])
    expect(formatValidators.jsonSchema({ ...in2020, type: "array", items: [{ type: "string" }] })).toEqual([
      { path: ["items"], message: 'must be object or boolean, not [{"type":"string"}] (a list of schemas is draft-07\'s items; in 2020-12 it is prefixItems)' }
    ])
  })

  it("refuses $async, at the root and below it: ajv's asynchronous validator answered a promise whose rejection stopped the owner", () => {
    const why = "svc checks a value as it arrives, at once: an asynchronous schema ($async: true, for ajv's asynchronous keywords, which svc does not define) is not taken"
    for (const dialect of [{}, { $schema: "https://json-schema.org/draft/2020-12/schema" }]) {
      const root = { ...dialect, $async: true, type: "object", properties: { secs: { type: "number", maximum: 1 } }, required: ["secs"] }
      expect(formatValidators.jsonSchema(root)).toEqual([{ path: ["$async"], message: why }])
      expect(formatValidators.validate(root, { secs: "x" })).toBe(why)
      const below = { ...dialect, type: "object", properties: { a: { $async: true, type: "string" } } }
      expect(formatValidators.jsonSchema(below)).toEqual([{ path: [], message: `a subschema says $async: true; ${why}` }])
      // `$async: false` is the default, and a property named $async is data.
      expect(formatValidators.jsonSchema({ ...dialect, $async: false, type: "object" })).toEqual([])
      expect(formatValidators.jsonSchema({ ...dialect, type: "object", properties: { $async: { type: "string" } } })).toEqual([])
      expect(formatValidators.validate({ ...dialect, type: "object", properties: { $async: { type: "string" } } }, { $async: 1 })).toMatch(/\$async/)
    }
  })

  it("stops a pattern that backtracks without end, after a second, and refuses the value saying why (it held the owner for hours)", () => {
    const schema = { type: "object", properties: { s: { type: "string", pattern: "^(a+)+$" } } }
    expect(formatValidators.validate(schema, { s: "aaaa" })).toBeUndefined()
    expect(formatValidators.validate(schema, { s: "b" })).toMatch(/^inputs\.s must match pattern/)
    const started = performance.now()
    expect(formatValidators.validate(schema, { s: `${"a".repeat(40)}!` })).toBe(PATTERN_STOPPED)
    // Hours without the watchdog; a little over its second with it (a generous bound for a busy machine).
    expect(performance.now() - started).toBeLessThan(PATTERN_CHECK_MS * 10)
    // The same under patternProperties; and the next value is checked as usual.
    const keyed = { type: "object", patternProperties: { "^(x+)+$": { type: "number" } } }
    expect(formatValidators.validate(keyed, { [`${"x".repeat(40)}!`]: 1 })).toBe(PATTERN_STOPPED)
    expect(formatValidators.validate(keyed, { xx: "one" })).toMatch(/must be number/)
    expect(formatValidators.validate(schema, { s: "aa" })).toBeUndefined()
  })

  it(`says at most ${MAX_SCHEMA_PROBLEMS} problems of one schema, then how many more (a generated schema printed 48,000 lines)`, () => {
    const broken = (n: number) => ({ type: "object", properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: "strin", tpye: 1 }])) })
    const problems = formatValidators.jsonSchema(broken(2_000))
    expect(problems).toHaveLength(MAX_SCHEMA_PROBLEMS + 1)
    expect(problems[0]).toEqual({ path: ["properties", "p0", "type"], message: expect.stringMatching(/^must be one of .*, not "strin"$/) })
    expect(problems.at(-1)).toEqual({ path: [], message: `3,900 more problems not listed (the first ${MAX_SCHEMA_PROBLEMS} are)` })
  })
})
