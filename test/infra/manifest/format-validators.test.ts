/** A value checked against a job's JSON Schema: each problem says what is wrong and where. */
import { describe, expect, it } from "vitest"
import { depthOf } from "../../../src/domain/runs/Values.js"
import { formatValidators, MAX_SCHEMA_DEPTH } from "../../../src/infra/manifest/FormatValidators.js"

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
