/** The owner's TLS material: generated once and kept, or the operator's own pair, checked before anything listens. */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { X509Certificate } from "node:crypto"
import { certificateValidity, fingerprintOf, loadOrCreate } from "../../../src/infra/tls/OwnerCertificate.js"

const dirs: Array<string> = []
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), "svc-tls-"))
  dirs.push(d)
  return d
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

describe("the owner's certificate", () => {
  it("is generated at first start and kept: the same fingerprint the next time", async () => {
    const home = temp()
    const first = await loadOrCreate(home)
    expect(first.fingerprint).toMatch(/^[0-9a-f]{64}$/)
    expect((await loadOrCreate(home)).fingerprint).toBe(first.fingerprint)
    // Valid from a day before it was made: a worker whose clock is behind can still take it (clock audit).
    const validFrom = Date.parse(new X509Certificate(first.cert).validFrom)
    expect(Date.now() - validFrom).toBeGreaterThan(23.9 * 3600_000)
    expect(Date.now() - validFrom).toBeLessThan(24.5 * 3600_000)
  }, 30_000)

  it("kept in the home but cut short or emptied, is refused naming the file (OpenSSL's words alone were said), not made anew", async () => {
    const home = temp()
    const made = await loadOrCreate(home)
    const crt = join(home, "tls", "owner.crt")
    const key = join(home, "tls", "owner.key")
    writeFileSync(crt, made.cert.slice(0, 200))
    await expect(loadOrCreate(home)).rejects.toThrow(`${crt} is not a PEM certificate`)
    writeFileSync(crt, made.cert)
    writeFileSync(key, "")
    await expect(loadOrCreate(home)).rejects.toThrow(`${key} is not a PEM private key`)
    writeFileSync(key, made.key)
    expect((await loadOrCreate(home)).fingerprint).toBe(made.fingerprint)
  }, 30_000)

  it("takes the operator's pair, and refuses one that is not a certificate, not a key, or not its key, naming the file", async () => {
    const [one, other] = [temp(), temp()]
    await Promise.all([loadOrCreate(one), loadOrCreate(other)])
    const cert = join(one, "tls", "owner.crt")
    const key = join(one, "tls", "owner.key")
    expect((await loadOrCreate(temp(), { certFile: cert, keyFile: key })).fingerprint).toBe(fingerprintOf(readFileSync(cert, "utf8")))
    // Once a decoder error thrown where the server was made: an internal error (exit 70).
    await expect(loadOrCreate(temp(), { certFile: cert, keyFile: cert })).rejects.toThrow(`--tls-key ${cert} is not a PEM private key`)
    await expect(loadOrCreate(temp(), { certFile: key, keyFile: key })).rejects.toThrow(`--tls-cert ${key} is not a PEM certificate`)
    const otherKey = join(other, "tls", "owner.key")
    await expect(loadOrCreate(temp(), { certFile: cert, keyFile: otherKey })).rejects.toThrow(`--tls-key ${otherKey} is not the key of the certificate in --tls-cert ${cert}`)
    const text = join(temp(), "notes.txt")
    writeFileSync(text, "hello\n")
    await expect(loadOrCreate(temp(), { certFile: text, keyFile: key })).rejects.toThrow(`--tls-cert ${text} is not a PEM certificate`)
  }, 30_000)
})

describe("the validity of the certificate a start serves", () => {
  it("is said when it has expired, is not valid yet, or expires within 14 days; not otherwise", async () => {
    const home = temp()
    const { cert } = await loadOrCreate(home)
    const x = new X509Certificate(cert)
    const [from, to] = [Date.parse(x.validFrom), Date.parse(x.validTo)]
    const day = 86_400_000
    expect(certificateValidity(cert, from + day)).toBeUndefined()
    expect(certificateValidity(cert, to + 1)).toMatch(/^the TLS certificate expired at \S+: every worker refuses it, and no new one can join; renew it/)
    // A worker takes a start up to a day ahead of its clock: refused beyond, taken within.
    const far = certificateValidity(cert, from - 2 * day)
    expect(far).toMatch(/^the TLS certificate is not valid before \S+: workers whose clocks agree with this machine's refuse it until (\S+) \(/)
    expect(far).toContain(`refuse it until ${new Date(from - day).toISOString()}`)
    expect(certificateValidity(cert, from - day / 2)).toMatch(/^the TLS certificate is not valid before \S+: workers take it \(they allow a start up to a day ahead of their own clock\), but one whose clock is behind this machine's may not; is this machine's clock right\?$/)
    expect(certificateValidity(cert, to - 3 * day - 1000)).toMatch(/^the TLS certificate expires at \S+, in 3 days: then every worker refuses it; renew it/)
    expect(certificateValidity(cert, to - 1000)).toContain("in less than a day")
    expect(certificateValidity(cert, to - 20 * day)).toBeUndefined()
  }, 30_000)
})
