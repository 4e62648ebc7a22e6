import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { describe, expect, it } from "vitest"
import { computeOffer, OfferConfigError, parseCapacity, parseLabels } from "../../../src/app/workers/Offer.js"
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
    expect((parseLabels("gpu", "linux", "x64") as OfferConfigError).message).toBe('SVC_WORKFLOW_LABELS holds "gpu", which is not a KEY=VALUE label')
    expect((parseLabels("os=windows", "linux", "x64") as OfferConfigError).message).toBe("SVC_WORKFLOW_LABELS may not claim os=windows: this machine is os=linux")
    expect(parseLabels("os=linux", "linux", "x64")).toEqual(["arch=x64", "os=linux"])
    expect((parseLabels("pool=a,pool=b", "linux", "x64") as OfferConfigError).message).toBe("SVC_WORKFLOW_LABELS sets pool twice (pool=a, pool=b): a label has one value")
    // A credential pasted into the labels: refused before the owner would journal it, and not repeated.
    const leaked = parseLabels(`k=svc_wk_${"A".repeat(36)}`, "linux", "x64") as OfferConfigError
    expect(leaked.message).toMatch(/^SVC_WORKFLOW_LABELS holds what is shaped as an svc secret/)
    expect(leaked.message).not.toContain("A".repeat(36))
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
