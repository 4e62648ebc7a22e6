import { describe, expect, it } from "vitest"
import * as fc from "effect/FastCheck"
import * as Arbitrary from "effect/Arbitrary"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import { WorkerRequest, WorkerResponse } from "../../../src/app/workers/Protocol.js"
import { strictGuard } from "../../../src/infra/schema/Guard.js"

// The route's decoder, exactly as WorkerRoute uses it.
const decode = ParseResult.decodeUnknownEither(WorkerRequest, { errors: "all", onExcessProperty: "error" })
const guard = strictGuard(WorkerRequest)
const valid = Arbitrary.make(WorkerRequest)
const viaJson = (v: unknown): unknown => JSON.parse(JSON.stringify(v))
/** An undefined value somewhere: JSON drops its key, which the guard (rightly, conservatively) then misses. */
const holdsUndefined = (v: unknown): boolean =>
  v === undefined || (typeof v === "object" && v !== null && Object.values(v).some(holdsUndefined))

/** Sound: whatever the guard lets through, the strict decoder accepts and returns unchanged. */
const sound = (u: unknown) => {
  if (!guard(u)) return
  const decoded = decode(u)
  expect(Either.isRight(decoded)).toBe(true)
  expect(Either.getOrThrow(decoded)).toStrictEqual(u)
}

/** Changes one thing somewhere in a JSON value: adds, drops or replaces a field or an item. */
const mutate = (v: unknown, path: ReadonlyArray<number>, replacement: unknown): unknown => {
  if (Array.isArray(v)) {
    if (v.length === 0 || path.length === 0) return [...v, replacement]
    const i = path[0]! % v.length
    return path.length === 1 ? v.map((x, j) => (j === i ? replacement : x)) : v.map((x, j) => (j === i ? mutate(x, path.slice(1), replacement) : x))
  }
  if (typeof v === "object" && v !== null) {
    const keys = Object.keys(v)
    const o = { ...(v as Record<string, unknown>) }
    if (keys.length === 0 || path.length === 0) return { ...o, extra: replacement }
    const k = keys[path[0]! % keys.length]!
    if (path.length === 1) {
      if (replacement === undefined) delete o[k]
      else o[k] = replacement
      return o
    }
    o[k] = mutate(o[k], path.slice(1), replacement)
    return o
  }
  return replacement
}

describe("the worker route's strict guard", () => {
  it("lets every valid message (as JSON carries it) through, unchanged by the decoder", () => {
    fc.assert(
      fc.property(valid, (v) => {
        const u = viaJson(v)
        if (Either.isLeft(decode(u))) return // JSON cannot carry it (NaN, an undefined that mattered)
        expect(guard(u)).toBe(true)
        sound(u)
      }),
      { numRuns: 2000 }
    )
  })

  it("never lets through what the decoder refuses: valid messages with one thing changed", () => {
    const replacement = fc.oneof(fc.constant(undefined), fc.jsonValue({ maxDepth: 2 }), fc.integer({ min: -2, max: 200 }), fc.string({ maxLength: 3 }))
    fc.assert(
      fc.property(valid, fc.array(fc.nat(20), { maxLength: 4 }), replacement, (v, path, r) => {
        sound(mutate(viaJson(v), path, r))
      }),
      { numRuns: 4000 }
    )
  })

  it("never lets through arbitrary JSON the decoder refuses", () => {
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 4 }), sound), { numRuns: 2000 })
  })

  it("refuses unknown fields, wrong kinds, bad refinements and inherited shapes", () => {
    const advertise = { kind: "advertise", fence: 1, capacity: 4, labels: ["os=linux"], capabilities: ["node"], artifacts: [] }
    expect(guard(advertise)).toBe(true)
    expect(guard({ ...advertise, extra: 1 })).toBe(false)
    expect(guard({ ...advertise, kind: "advertize" })).toBe(false)
    expect(guard({ ...advertise, fence: 0 })).toBe(false)
    expect(guard({ ...advertise, capacity: 101 })).toBe(false)
    expect(guard({ ...advertise, labels: ["no equals sign"] })).toBe(false)
    // A machine has one os and one arch; other keys may repeat (two GPU models).
    expect(guard({ ...advertise, labels: ["os=linux", "os=windows"] })).toBe(false)
    expect(guard({ ...advertise, labels: ["arch=x64", "os=linux", "arch=arm64"] })).toBe(false)
    expect(guard({ ...advertise, labels: ["os=linux", "arch=x64", "gpu=a100", "gpu=v100"] })).toBe(true)
    expect(guard({ ...advertise, artifacts: [{ address: "a:b@1", digest: "sha256:00", more: true }] })).toBe(false)
    expect(guard(Object.assign(Object.create({ inherited: true }), advertise))).toBe(false)
    expect(guard(JSON.parse('{"kind":"claim","fence":1,"waitSeconds":3,"__proto__":{}}'))).toBe(false)
    expect(guard({ kind: "claim", fence: 1, waitSeconds: 3 })).toBe(true)
  })
})

describe("the strict guard of the route's responses", () => {
  // What WorkerRoute skips when the guard lets a response through.
  const encode = ParseResult.encodeUnknownEither(WorkerResponse, { errors: "all", onExcessProperty: "error" })
  const isResponse = strictGuard(WorkerResponse)

  it("lets every valid response through, and encoding would have left it as it is", () => {
    fc.assert(
      fc.property(Arbitrary.make(WorkerResponse), (v) => {
        if (holdsUndefined(v)) return
        const u = viaJson(v)
        if (Either.isLeft(encode(u))) return
        expect(isResponse(u)).toBe(true)
        expect(Either.getOrThrow(encode(u))).toStrictEqual(u)
      }),
      { numRuns: 1000 }
    )
  })

  it("never lets through a response with one thing changed that encoding refuses or rewrites", () => {
    const replacement = fc.oneof(fc.constant(undefined), fc.jsonValue({ maxDepth: 2 }), fc.integer({ min: -2, max: 200 }))
    fc.assert(
      fc.property(Arbitrary.make(WorkerResponse), fc.array(fc.nat(20), { maxLength: 4 }), replacement, (v, path, r) => {
        const u = mutate(viaJson(v), path, r)
        if (!isResponse(u)) return
        const encoded = encode(u)
        expect(Either.isRight(encoded)).toBe(true)
        expect(Either.getOrThrow(encoded)).toStrictEqual(u)
      }),
      { numRuns: 2000 }
    )
  })
})
