/** What `svc workers invite` notes about the address its token carries. */
import { describe, expect, it } from "vitest"
import { onlyThisMachine, usedOfCapacity } from "../../src/cli/commands/workers.js"

describe("svc workers invite", () => {
  it.each([
    ["https://127.0.0.1:7443", true],
    ["https://127.8.9.10:7443", true],
    ["https://localhost:7443", true],
    ["https://[::1]:7443", true],
    ["https://10.0.0.5:7443", false],
    ["https://owner.lan:7443", false],
    ["https://127.example.com:7443", false],
    ["https://[fe80::1]:7443", false]
  ])("%s reaches only this machine: %s", (url, only) => {
    expect(onlyThisMachine(url)).toBe(only)
  })
})

describe("svc workers status", () => {
  it("shows USED/CAP, and for a revoked worker only the slots it still holds", () => {
    expect(usedOfCapacity({ used: 1, capacity: 4, revoked: false })).toBe("1/4")
    expect(usedOfCapacity({ used: 1, capacity: 0, revoked: true })).toBe("1 held")
    expect(usedOfCapacity({ used: 0, capacity: 0, revoked: true })).toBe("-")
    // Offline, its advertisement lapsed: it offers nothing, and holds what its attempts held.
    expect(usedOfCapacity({ used: 1, capacity: 0, revoked: false })).toBe("1 held")
  })
})
