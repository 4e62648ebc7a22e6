/**
 * The entropy port on node:crypto: bytes from a pool refilled from the CSPRNG. Every request
 * gets its own bytes (never a copy of another's, never zeros left by the pool), across refills.
 */
import { describe, expect, it } from "vitest"
import { make } from "../../../src/infra/workers/NodeEntropy.js"

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")

describe("NodeEntropy", () => {
  it("hands out distinct bytes of the asked length, across refills of the pool and past its size", () => {
    const entropy = make(64)
    const seen = new Set<string>()
    for (let i = 0; i < 200; i++) {
      const n = [10, 24, 32, 7][i % 4]!
      const b = entropy.bytes(n)
      expect(b).toHaveLength(n)
      expect(seen.has(hex(b))).toBe(false)
      seen.add(hex(b))
    }
    expect(entropy.bytes(100)).toHaveLength(100)
    expect(hex(entropy.bytes(100))).not.toBe(hex(entropy.bytes(100)))
  })

  it("returns copies: changing one does not change the next", () => {
    const entropy = make(64)
    const a = entropy.bytes(16)
    const before = hex(a)
    a.fill(0)
    expect(hex(entropy.bytes(16))).not.toBe(before)
    expect(hex(a)).toBe("00".repeat(16))
  })

  it("is not all zeros (the pool is filled before use)", () => {
    const entropy = make(64)
    const total = Array.from({ length: 20 }, () => entropy.bytes(32)).reduce((n, b) => n + b.reduce((x, y) => x + y, 0), 0)
    expect(total).toBeGreaterThan(0)
  })
})
