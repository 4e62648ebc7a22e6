/** A value checked against a job's JSON Schema: each problem says what is wrong and where. */
import { describe, expect, it } from "vitest"
import { formatValidators } from "../../../src/infra/manifest/FormatValidators.js"

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
