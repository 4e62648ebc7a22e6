/**
 * Certificate succession (src/infra/tls/Succession.ts): each change of the owner's certificate
 * signed with the key of the one before; a worker follows the changes from its pin to the
 * certificate presented, and nothing else: not a change signed by another key, not one that
 * starts elsewhere, not one that ends at another certificate than the one presented.
 */
import { execFileSync } from "node:child_process"
import { readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { fingerprintOf, loadOrCreate } from "../../../src/infra/tls/OwnerCertificate.js"
import { follow, MAX_STEPS, noteServed, pathOf, signStep, type SuccessionStep } from "../../../src/infra/tls/Succession.js"
import { tempDir } from "../../support/svc.js"

interface Pair {
  readonly cert: string
  readonly key: string
  readonly fingerprint: string
}

/** A self-signed pair made by openssl: `rsa`, `ec` (P-256) or `ed25519`. */
const pair = (kind: "rsa" | "ec" | "ed25519"): Pair => {
  const dir = tempDir("svc-succession-")
  const newKey = kind === "rsa" ? ["-newkey", "rsa:2048"] : kind === "ec" ? ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"] : ["-newkey", "ed25519"]
  execFileSync("openssl", ["req", "-x509", ...newKey, "-nodes", "-subj", `/CN=svc test ${kind}`, "-days", "30", "-keyout", join(dir, "k.pem"), "-out", join(dir, "c.pem")], { stdio: "ignore" })
  const cert = readFileSync(join(dir, "c.pem"), "utf8")
  return { cert, key: readFileSync(join(dir, "k.pem"), "utf8"), fingerprint: fingerprintOf(cert) }
}

const at = new Date("2026-11-26T10:00:00Z")

describe("a change of the owner's certificate", () => {
  it("signed with the key of the one before is followed from the pin to the certificate presented, whatever the kinds of key", () => {
    const [a, b, c, d] = [pair("rsa"), pair("ec"), pair("ed25519"), pair("rsa")]
    const steps = [signStep(a, b.cert, at), signStep(b, c.cert, at), signStep(c, d.cert, at)]
    expect(steps.map((s) => [s.from, s.to])).toEqual([
      [a.fingerprint, b.fingerprint],
      [b.fingerprint, c.fingerprint],
      [c.fingerprint, d.fingerprint]
    ])
    expect(follow(a.cert, steps, d.fingerprint)).toEqual({ certificate: d.cert })
    expect(follow(a.cert, steps.slice(0, 1), b.fingerprint)).toEqual({ certificate: b.cert })
    // From a later pin, the steps from there.
    expect(follow(b.cert, steps.slice(1), d.fingerprint)).toEqual({ certificate: d.cert })
  }, 30_000)

  it("is not followed when signed by another key, starting elsewhere, naming another certificate, or ending at another than the one presented", () => {
    const [a, b, c, mallory] = [pair("ec"), pair("ec"), pair("ec"), pair("ec")]
    const good = signStep(a, b.cert, at)
    // Whoever holds only their own key signs "a -> theirs": not the pinned key's signature.
    const forged: SuccessionStep = { ...signStep(mallory, mallory.cert, at), from: a.fingerprint, to: mallory.fingerprint }
    expect(follow(a.cert, [forged], mallory.fingerprint)).toEqual({ problem: `change 1 of 1 (to sha256 ${mallory.fingerprint}) is not signed by the key of the certificate before it` })
    // A real signature, its certificate swapped for another.
    expect(follow(a.cert, [{ ...good, certificate: mallory.cert }], mallory.fingerprint)).toEqual({
      problem: `change 1 of 1 names another certificate (sha256 ${b.fingerprint}) than the one it carries`
    })
    // The signature of one change under another's names.
    expect(follow(a.cert, [{ ...good, to: mallory.fingerprint, certificate: mallory.cert }], mallory.fingerprint)).toEqual({
      problem: `change 1 of 1 (to sha256 ${mallory.fingerprint}) is not signed by the key of the certificate before it`
    })
    expect(follow(c.cert, [good], b.fingerprint)).toEqual({ problem: `change 1 of 1 starts at another certificate (sha256 ${a.fingerprint}) than the pinned one (sha256 ${c.fingerprint})` })
    expect(follow(a.cert, [good, signStep(c, mallory.cert, at)], mallory.fingerprint)).toEqual({
      problem: `change 2 of 2 starts at another certificate (sha256 ${c.fingerprint}) than the one before it (sha256 ${b.fingerprint})`
    })
    // Genuine changes, but the address presents another certificate than where they lead.
    expect(follow(a.cert, [good], mallory.fingerprint)).toEqual({ problem: `its signed changes end at another certificate (sha256 ${b.fingerprint}) than the one it presented (sha256 ${mallory.fingerprint})` })
    expect(follow(a.cert, [], mallory.fingerprint)).toEqual({ problem: "it offered no change signed by the pinned certificate's key" })
    expect(follow(a.cert, [{ ...good, signature: "not base64 at all!" }], b.fingerprint)).toMatchObject({ problem: expect.stringContaining("is not signed by the key") })
    expect(follow(a.cert, [{ ...good, certificate: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n" }], b.fingerprint)).toEqual({ problem: "change 1 of 1 carries a certificate that is not one" })
    expect(follow(a.cert, Array.from({ length: MAX_STEPS + 1 }, () => good), b.fingerprint)).toEqual({
      problem: `it offered ${MAX_STEPS + 1} changes of certificate, more than the ${MAX_STEPS} a worker follows`
    })
  }, 30_000)

  it("is answered as the shortest way from the certificate asked about to the one served, a certificate served again included", () => {
    const [a, b, c] = [pair("ed25519"), pair("ed25519"), pair("ed25519")]
    const ab = signStep(a, b.cert, at)
    const bc = signStep(b, c.cert, at)
    const ca = signStep(c, a.cert, at)
    const ab2 = signStep(a, b.cert, at)
    const steps = [ab, bc, ca, ab2]
    expect(pathOf(steps, a.fingerprint, c.fingerprint)).toEqual([ab, bc])
    expect(pathOf(steps, c.fingerprint, b.fingerprint)).toEqual([ca, ab])
    expect(pathOf(steps, b.fingerprint, a.fingerprint)).toEqual([bc, ca])
    expect(pathOf(steps, a.fingerprint, a.fingerprint)).toEqual([])
    expect(pathOf(steps, "0".repeat(64), a.fingerprint)).toEqual([])
    expect(follow(c.cert, pathOf(steps, c.fingerprint, b.fingerprint), b.fingerprint)).toEqual({ certificate: b.cert })
  }, 30_000)
})

describe("the certificate a start serves", () => {
  it("is kept (key 0600) at the first start, signs a change from it at a start with another, and nothing when it is the same", async () => {
    const home = tempDir("svc-succession-home-")
    const generated = await loadOrCreate(home)
    // A home whose owner generated its certificate, the operator's own given now: signed with the generated key.
    const own = pair("ec")
    const first = await noteServed(home, own, at)
    expect(first.served).toMatchObject({ kind: "changed", step: { from: generated.fingerprint, to: own.fingerprint } })
    expect(follow(generated.cert, first.steps, own.fingerprint)).toEqual({ certificate: own.cert })
    expect(statSync(join(home, "tls", "served.key")).mode & 0o777).toBe(0o600)
    expect(readFileSync(join(home, "tls", "served.crt"), "utf8")).toBe(own.cert)
    expect((await noteServed(home, own, at)).served).toEqual({ kind: "same" })
    // Renewed: signed with the served copy's key, the operator's files replaced meanwhile.
    const renewed = pair("rsa")
    const second = await noteServed(home, renewed, at)
    expect(second.served).toMatchObject({ kind: "changed", step: { from: own.fingerprint, to: renewed.fingerprint } })
    expect(second.steps).toHaveLength(2)
    expect(follow(generated.cert, pathOf(second.steps, generated.fingerprint, renewed.fingerprint), renewed.fingerprint)).toEqual({ certificate: renewed.cert })
  }, 30_000)

  it("on a home with no certificate served before, is only kept; a list of changes that cannot be read stops the start, naming the file", async () => {
    const home = tempDir("svc-succession-new-")
    expect(await noteServed(home, pair("ec"), at)).toEqual({ served: { kind: "first" }, steps: [] })
    writeFileSync(join(home, "tls", "succession.json"), "{ not json")
    await expect(noteServed(home, pair("ec"), at)).rejects.toThrow(`${join(home, "tls", "succession.json")} is not JSON: move it away to start without the certificate changes it holds (linked workers then join again)`)
    writeFileSync(join(home, "tls", "succession.json"), JSON.stringify({ steps: [{ from: "x" }] }))
    await expect(noteServed(home, pair("ec"), at)).rejects.toThrow("is not a list of certificate changes")
  }, 30_000)
})
