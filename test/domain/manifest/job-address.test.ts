/** Job addresses `BAG:JOB@VERSION` and remote eligibility (worker-protocol, "Remote-eligible bag job"). */
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { formatJobAddress, parseJobAddress } from "../../../src/domain/manifest/JobAddress.js"
import { explainEligibility, remoteEligibility } from "../../../src/domain/manifest/RemoteEligibility.js"
import { doc, valid } from "./cases.js"

describe("job addresses", () => {
  it.each(["hasher:checksum@1.0.0", "my.bag_2:nightly-sync@2", "a:b@1.0.0-rc.1+build"])("parses and prints %s", (address) => {
    const parsed = parseJobAddress(address)
    expect(Either.isRight(parsed)).toBe(true)
    expect(formatJobAddress(Either.getOrThrow(parsed))).toBe(address)
  })

  it("splits an address into bag, job and version", () => {
    expect(Either.getOrThrow(parseJobAddress("hasher:checksum@1.0.0"))).toMatchObject({ bag: "hasher", job: "checksum", version: "1.0.0" })
  })

  it.each(["hasher:checksum", "checksum@1.0.0", "hasher:Checksum@1", "hasher:checksum@", ":checksum@1", "bag:job@1@2", "bag:job@1 "])(
    "refuses %j with a message naming the form",
    (address) => {
      const parsed = parseJobAddress(address)
      expect(Either.isLeft(parsed)).toBe(true)
      expect(Either.getLeft(parsed).pipe((o) => (o._tag === "Some" ? o.value : ""))).toContain("BAG:JOB@VERSION")
    }
  )
})

describe("remote eligibility", () => {
  const jobOf = (...lines: Array<string>) => valid(doc("jobs:", "  j:", ...lines.map((l) => `    ${l}`))).jobs!["j"]!
  const files = ["version: 1.0.0"]

  it("is eligible for a versioned node job with no secrets that touches no files", () => {
    const e = remoteEligibility(jobOf(...files, "runs: {using: node, main: j.mjs, env: [MODE=fast]}", "requires: {labels: [gpu=true], bins: [ffmpeg]}"))
    expect(e).toEqual({ eligible: true })
    expect(explainEligibility(e)).toBe("remote-eligible")
  })

  it.each([
    ["unversioned", ["runs: {using: node, main: j.mjs}"]],
    ["not-node", [...files, "runs: {using: process, command: [echo]}"]],
    ["not-node", [...files, "runs: {using: action, action: review}"]],
    ["declares-secrets", [...files, "runs: {using: node, main: j.mjs, secrets: [TOKEN]}"]],
    ["declares-secrets", [...files, "runs: {using: node, main: j.mjs}", "requires: {secrets: [TOKEN]}"]],
    ["touches-files", [...files, "runs: {using: node, main: j.mjs, working-directory: data}"]],
    ["touches-files", [...files, "runs: {using: node, main: j.mjs}", "preflight: {command: 'test -d /srv'}"]],
    ["touches-files", [...files, "runs: {using: node, main: j.mjs}", "validate: {files_exist: [out.txt]}"]]
  ] as const)("is refused with %s", (code, lines) => {
    const e = remoteEligibility(jobOf(...lines))
    expect(e.eligible).toBe(false)
    if (!e.eligible) expect(e.reasons.map((r) => r.code)).toEqual([code])
  })

  it("gives every reason at once, in words", () => {
    const e = remoteEligibility(jobOf("runs: {using: process, command: [x], secrets: [A]}", "validate: {command: 'true'}"))
    expect(e.eligible).toBe(false)
    if (!e.eligible) expect(e.reasons.map((r) => r.code)).toEqual(["unversioned", "not-node", "declares-secrets", "touches-files"])
    expect(explainEligibility(e)).toBe(
      "owner only: it has no version, so it has no BAG:JOB@VERSION address; it runs with process, not node; it declares secrets (A); it touches files on the host (validate)"
    )
  })
})
