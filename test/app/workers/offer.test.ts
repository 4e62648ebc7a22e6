import { describe, expect, it } from "vitest"
import { OfferConfigError, parseCapacity, parseLabels } from "../../../src/app/workers/Offer.js"

describe("SVC_WORKFLOW_CAPACITY", () => {
  it.each([
    [undefined, 4],
    ["", 4],
    ["1", 1],
    ["100", 100],
    [" 8 ", 8]
  ])("%j gives %d", (raw, n) => expect(parseCapacity(raw)).toBe(n))

  it.each(["0", "101", "4.5", "-1", "four", "1e2"])("%j is refused with a clear message", (raw) => {
    const r = parseCapacity(raw)
    expect(r).toBeInstanceOf(OfferConfigError)
    expect((r as OfferConfigError).message).toBe(`SVC_WORKFLOW_CAPACITY must be a whole number from 1 to 100, not ${JSON.stringify(raw)}`)
  })
})

describe("SVC_WORKFLOW_LABELS", () => {
  it("always has os and arch, adds KEY=VALUE labels, sorted", () => {
    expect(parseLabels(undefined, "linux", "x64")).toEqual(["arch=x64", "os=linux"])
    expect(parseLabels("gpu=true, zone=lab ,", "linux", "x64")).toEqual(["arch=x64", "gpu=true", "os=linux", "zone=lab"])
  })

  it("refuses a malformed label, and a label that contradicts the machine", () => {
    expect((parseLabels("gpu", "linux", "x64") as OfferConfigError).message).toBe('SVC_WORKFLOW_LABELS holds "gpu", which is not a KEY=VALUE label')
    expect((parseLabels("os=windows", "linux", "x64") as OfferConfigError).message).toBe("SVC_WORKFLOW_LABELS may not claim os=windows: this machine is os=linux")
    expect(parseLabels("os=linux", "linux", "x64")).toEqual(["arch=x64", "os=linux"])
  })
})
