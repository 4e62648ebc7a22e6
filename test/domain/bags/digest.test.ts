import { describe, expect, it } from "vitest"
import { canonicalListing, formatDigest, shortDigest } from "../../../src/domain/bags/Digest.js"

const a = { path: "bag.yaml", executable: false, sha256: "aa" }
const b = { path: "jobs/run.mjs", executable: true, sha256: "bb" }
const c = { path: "README.md", executable: false, sha256: "cc" }

describe("the canonical listing", () => {
  it("is one line per file, sorted by path, with the mode and the content hash", () => {
    expect(canonicalListing([b, a, c])).toBe("README.md\u0000-\u0000cc\nbag.yaml\u0000-\u0000aa\njobs/run.mjs\u0000x\u0000bb\n")
  })

  it("does not depend on the order files were found in", () => {
    expect(canonicalListing([a, b, c])).toBe(canonicalListing([c, b, a]))
  })

  it("changes with the executable bit and with content", () => {
    expect(canonicalListing([a, b])).not.toBe(canonicalListing([a, { ...b, executable: false }]))
    expect(canonicalListing([a, b])).not.toBe(canonicalListing([a, { ...b, sha256: "bc" }]))
  })

  it("writes digests as sha256:<hex> and shortens them to 12 characters", () => {
    const d = formatDigest("0123456789abcdef0123")
    expect(d).toBe("sha256:0123456789abcdef0123")
    expect(shortDigest(d)).toBe("0123456789ab")
  })
})
