import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { describe, expect, it } from "vitest"
import { computeOffer, fitArtifacts, OfferConfigError, parseCapacity, parseLabels } from "../../../src/app/workers/Offer.js"
import { MAX_ARTIFACTS, MAX_BODY_BYTES } from "../../../src/app/workers/Protocol.js"
import { LABEL_RULE } from "../../../src/domain/manifest/Formats.js"
import * as FileBagStore from "../../../src/infra/bags/FileBagStore.js"
import * as HostPrograms from "../../../src/infra/bags/HostPrograms.js"
import * as NodeBagDirectory from "../../../src/infra/bags/NodeBagDirectory.js"
import * as ManifestSourceLive from "../../../src/infra/manifest/ManifestSourceLive.js"
import { layerAt as svcHomeAt } from "../../../src/infra/SvcHome.js"
import { svc, tempDir } from "../../support/svc.js"

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
    expect((parseLabels("gpu", "linux", "x64") as OfferConfigError).message).toBe(`SVC_WORKFLOW_LABELS holds "gpu", which is not ${LABEL_RULE}`)
    expect((parseLabels("os=windows", "linux", "x64") as OfferConfigError).message).toBe("SVC_WORKFLOW_LABELS may not claim os=windows: this machine is os=linux")
    expect(parseLabels("os=linux", "linux", "x64")).toEqual(["arch=x64", "os=linux"])
    expect((parseLabels("pool=a,pool=b", "linux", "x64") as OfferConfigError).message).toBe("SVC_WORKFLOW_LABELS sets pool twice (pool=a, pool=b): a label has one value")
    // A credential pasted into the labels: refused before the owner would journal it, and not repeated.
    const leaked = parseLabels(`k=svc_wk_${"A".repeat(36)}`, "linux", "x64") as OfferConfigError
    expect(leaked.message).toMatch(/^SVC_WORKFLOW_LABELS holds what is shaped as an svc secret/)
    expect(leaked.message).not.toContain("A".repeat(36))
  })
})

describe("SVC_WORKFLOW_LABELS the owner would refuse", () => {
  it("are refused at start: too long, with a control character, or too many (every advertisement refused, the worker said hello again and again)", () => {
    const message = (raw: string) => (parseLabels(raw, "linux", "x64") as OfferConfigError).message
    expect(parseLabels(`k=${"x".repeat(198)}`, "linux", "x64")).toContain(`k=${"x".repeat(198)}`)
    expect(message(`k=${"x".repeat(299)}`)).toBe(`SVC_WORKFLOW_LABELS holds "k=${"x".repeat(58)}…", which is 301 characters long: a label is at most 200`)
    for (const raw of ["k=v\u001b[31m", "k=a\u0000b", "k=a\u009bb", "k=\u007f"]) expect(message(raw), JSON.stringify(raw)).toBe(`SVC_WORKFLOW_LABELS holds ${JSON.stringify(raw)}, which is not ${LABEL_RULE}`)
    expect(parseLabels("zone=zürich", "linux", "x64")).toContain("zone=zürich")
    const many = (n: number) => Array.from({ length: n }, (_, i) => `k${i}=v`).join(",")
    expect(parseLabels(many(98), "linux", "x64")).toHaveLength(100)
    expect(message(many(99))).toBe("SVC_WORKFLOW_LABELS sets 99 labels; with os and arch a worker advertises at most 100")
  })
})

describe("an advertisement's artifacts", () => {
  const artifact = (i: number, name = "job") => ({ address: `bag${String(i).padStart(4, "0")}:${name}@1.0.0`, digest: `sha256:${"0".repeat(64)}` })
  const rest = { capacity: 4, labels: ["arch=x64", "os=linux"], capabilities: ["node"] }

  it("are all offered when they fit, in address order", () => {
    const { offered, left } = fitArtifacts([artifact(2), artifact(1)], rest)
    expect(offered).toEqual([artifact(1), artifact(2)])
    expect(left).toEqual([])
  })

  it("are at most 1,000 and fit in the 64 KiB body the owner takes: the rest are left out, not the whole advertisement refused", () => {
    // ~110 bytes each: 1,000 do not fit in 64 KiB.
    const many = Array.from({ length: 1_200 }, (_, i) => artifact(i))
    const { offered, left } = fitArtifacts(many, rest)
    expect(offered.length + left.length).toBe(1_200)
    expect(offered).toEqual(many.slice(0, offered.length))
    const body = JSON.stringify({ kind: "advertise", fence: Number.MAX_SAFE_INTEGER, ...rest, artifacts: offered, busy: 100 })
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(MAX_BODY_BYTES)
    expect(Buffer.byteLength(body)).toBeGreaterThan(MAX_BODY_BYTES - 2_000)
    // Short addresses: the count is the bound.
    const short = Array.from({ length: 1_200 }, (_, i) => ({ address: `b:j${i}@1`, digest: "sha256:x" }))
    expect(fitArtifacts(short, rest).offered).toHaveLength(MAX_ARTIFACTS)
    // One too large for any advertisement is left out alone.
    const huge = { address: `big:j@${"a".repeat(70_000)}`, digest: "sha256:x" }
    expect(fitArtifacts([huge, artifact(1)], rest)).toEqual({ offered: [artifact(1)], left: [huge] })
  })
})

describe("the offer of installed bags", () => {
  it("advertises remote-eligible jobs with their digest, and bin:NAME for each required program found on PATH", async () => {
    const home = tempDir("svc-offer-")
    const cwd = tempDir("svc-offer-src-")
    expect((await svc(["new", "tools"], { cwd, home })).code).toBe(0)
    const manifest = join(cwd, "tools", "bag.yaml")
    writeFileSync(manifest, readFileSync(manifest, "utf8").replace("    timeout: 30s", "    timeout: 30s\n    requires:\n      bins: [node, svc-no-such-program-xyz]"))
    expect((await svc(["bag", "install", "tools"], { cwd, home })).code).toBe(0)
    const layers = Layer.mergeAll(NodeBagDirectory.layer, FileBagStore.layer.pipe(Layer.provide(svcHomeAt(home))), ManifestSourceLive.layer, HostPrograms.layer)
    const offer = await Effect.runPromise(computeOffer({ env: {}, os: "linux", arch: "x64", capabilities: ["node", "process"] }).pipe(Effect.provide(layers)))
    expect(offer.artifacts).toEqual([{ address: "tools:checksum@1.0.0", digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) }])
    expect(offer.capabilities).toEqual(["bin:node", "node", "process"])
  })
})
