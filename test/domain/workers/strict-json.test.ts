/** What JSON.parse lets through and a worker's message must not hold (domain/workers/StrictJson.ts). */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { duplicateKeyIn, secretPlaceIn } from "../../../src/domain/workers/StrictJson.js"

describe("a key twice in one object", () => {
  it.each([
    ['{"kind":"claim","kind":"bye"}', "kind"],
    ['{"a":{"b":1,"c":{"d":1,"d":2}}}', "a.c.d"],
    ['{"a":[1,{"x":1},{"y":1,"y":2}]}', "a[2].y"],
    ['{"k\\u0069nd":1,"kind":2}', "kind"],
    ['[{"a":1},{"a":1,"a":1}]', "[1].a"],
    ['{"a":"}{\\"a\\":1","a":2}', "a"]
  ])("%s names %s", (text, path) => {
    expect(() => JSON.parse(text)).not.toThrow()
    expect(duplicateKeyIn(text)).toBe(path)
  })

  it.each([
    '{"a":1,"b":{"a":1},"c":[{"a":1},{"a":1}]}',
    '{"a":"a","b":["a","a"],"c":{"d":"b","e":"b"}}',
    '{"a\\"b":1,"a":2,"b":"\\\\","c":{}}',
    "[]",
    '"kind"',
    "12"
  ])("%s has none", (text) => {
    expect(duplicateKeyIn(text)).toBeUndefined()
  })

  it("agrees with JSON.parse on any JSON without repeated keys: never a false alarm", () => {
    fc.assert(fc.property(fc.jsonValue(), (value) => duplicateKeyIn(JSON.stringify(value)) === undefined))
  })
})

describe("a secret-shaped string in a message", () => {
  const credential = "svc_wk_" + "A1".repeat(18)
  it("is found in values and keys, at their place", () => {
    expect(secretPlaceIn({ kind: "advertise", labels: ["os=linux", `k=${credential}`] })).toBe("labels[1]")
    expect(secretPlaceIn({ kind: "x", a: { [credential]: 1 } })).toBe("a.svc_wk_… (its name)")
    expect(secretPlaceIn({ name: "svc_jt_eyJ2IjoxfQ_abc" })).toBe("name")
  })

  it("is allowed where the caller says (a join's proof, a job's own result)", () => {
    expect(secretPlaceIn({ kind: "join", previousCredential: credential }, new Set(["previousCredential"]))).toBeUndefined()
    expect(secretPlaceIn({ kind: "report", outcome: { result: credential } }, new Set(["outcome"]))).toBeUndefined()
    // Only at the top level.
    expect(secretPlaceIn({ kind: "report", x: { outcome: credential } }, new Set(["outcome"]))).toBe("x.outcome")
  })

  it("is not a word that merely starts like one", () => {
    expect(secretPlaceIn({ labels: ["svc_wk_", "note=svc_", "svc_wkx"] })).toBeUndefined()
  })
})

describe("bodies nested as deep as 64 KiB allows", () => {
  it("are walked without recursion: 30,000 levels neither overflow the stack nor stop the owner", () => {
    const depth = 30_000
    const text = `{"x":${"[".repeat(depth)}"svc_wk_${"A".repeat(36)}"${"]".repeat(depth)}}`
    const value = JSON.parse(text) as unknown
    expect(secretPlaceIn(value)).toBe(`x${"[0]".repeat(depth)}`)
    expect(secretPlaceIn(JSON.parse(`{"x":${"[".repeat(depth)}${"]".repeat(depth)}}`))).toBeUndefined()
    expect(duplicateKeyIn(`{"a":${"[".repeat(depth)}{"b":1,"b":2}${"]".repeat(depth)}}`)).toBe(`a${"[0]".repeat(depth)}.b`)
  })
})
