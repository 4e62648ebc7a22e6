import { describe, expect, it } from "vitest"
import { credentialProblem, crc32, formatJoinToken, holdsSecret, joinKeyProblem, makeCredential, makeJoinKey, parseJoinToken, secretKindOf, withoutSecrets } from "../../../src/domain/workers/Secrets.js"

const bytes = (seed: number, n = 40) => Uint8Array.from({ length: n }, (_, i) => (seed * 31 + i * 17) % 256)

describe("worker credentials", () => {
  it("are svc_wk_ + 30 random base62 + a 6-character checksum, and check out", () => {
    const c = makeCredential(bytes(1))
    expect(c).toMatch(/^svc_wk_[0-9A-Za-z]{36}$/)
    expect(credentialProblem(c)).toBeUndefined()
    expect(makeCredential(bytes(2))).not.toBe(c)
  })

  it("refuses a mistyped, truncated or foreign one before any lookup", () => {
    const c = makeCredential(bytes(3))
    const typo = c.slice(0, 10) + (c[10] === "a" ? "b" : "a") + c.slice(11)
    expect(credentialProblem(typo)).toMatch(/checksum does not match/)
    expect(credentialProblem(c.slice(0, -1))).toMatch(/36 letters and digits/)
    expect(credentialProblem("ghp_" + c.slice(7))).toMatch(/starts with svc_wk_/)
  })

  it("uses the standard CRC-32", () => {
    expect(crc32("123456789")).toBe(0xcbf43926)
  })
})

describe("join tokens", () => {
  const content = { url: "https://owner.lan:7443", fingerprint: "a1".repeat(32), inviteId: "inv123", secret: "s3cr3t" }

  it("carry the owner's URL, certificate fingerprint, invite and secret, and read back", () => {
    const token = formatJoinToken(content)
    expect(token).toMatch(/^svc_jt_[A-Za-z0-9_-]+_[0-9A-Za-z]{6}$/)
    expect(parseJoinToken(token)).toEqual(content)
    expect(parseJoinToken(`  ${token}\n`)).toEqual(content)
  })

  it("carry no scope, and an edited token fails its checksum", () => {
    const token = formatJoinToken(content)
    expect(Buffer.from(token.slice(7, token.lastIndexOf("_")), "base64url").toString()).not.toContain("scope")
    const body = JSON.parse(Buffer.from(token.slice(7, token.lastIndexOf("_")), "base64url").toString())
    const edited = `svc_jt_${Buffer.from(JSON.stringify({ ...body, scope: ["*"] })).toString("base64url")}${token.slice(token.lastIndexOf("_"))}`
    expect(parseJoinToken(edited)).toMatch(/checksum does not match/)
  })

  it("says what is wrong with something that is not a token", () => {
    expect(parseJoinToken("svc_wk_abc")).toBe("a join token starts with svc_jt_")
    expect(parseJoinToken("svc_jt_")).toMatch(/checksum/)
  })
})

describe("join keys", () => {
  it("are svc_jk_ + 30 random base62 + a 6-character checksum, and check out", () => {
    const k = makeJoinKey(bytes(8))
    expect(k).toMatch(/^svc_jk_[0-9A-Za-z]{36}$/)
    expect(joinKeyProblem(k)).toBeUndefined()
    expect(makeJoinKey(bytes(9))).not.toBe(k)
  })

  it("refuse a changed, cut or foreign one, without repeating it", () => {
    const k = makeJoinKey(bytes(10))
    const typo = k.slice(0, 10) + (k[10] === "a" ? "b" : "a") + k.slice(11)
    const problems = [joinKeyProblem(typo), joinKeyProblem(k.slice(0, -1)), joinKeyProblem(makeCredential(bytes(10)))]
    expect(problems).toEqual([
      "joinKey's checksum does not match: it was changed or cut short",
      "joinKey must be svc_jk_ followed by 36 letters and digits",
      "joinKey must be svc_jk_ followed by 36 letters and digits"
    ])
  })
})

describe("secrets in messages", () => {
  it("are cut to their prefix wherever they appear; other text is left as it is", () => {
    const c = makeCredential(bytes(5, 30))
    const t = formatJoinToken({ url: "https://o:1", fingerprint: "ab".repeat(32), inviteId: "i1", secret: "s".repeat(40) })
    expect(withoutSecrets(`no worker "${c}" and no invite "${t}"; svc_wk_ alone`)).toBe('no worker "svc_wk_…" and no invite "svc_jt_…"; svc_wk_ alone')
    expect(withoutSecrets("svc workers: lab-1 is linked")).toBe("svc workers: lab-1 is linked")
    // Said once already: not cut again.
    expect(withoutSecrets("a credential (svc_wk_…)")).toBe("a credential (svc_wk_…)")
  })

  it("are refused exactly where they would be cut: one shape for both", () => {
    const c = makeCredential(bytes(7, 30))
    for (const text of [c, `k=${c}`, "svc_jt_eyJ", "svc_wk_-x", "svc_wk__", "a svc_jt_x b", makeJoinKey(bytes(11)), "svc_jk_x"]) {
      expect(holdsSecret(text), text).toBe(true)
      expect(withoutSecrets(text), text).not.toBe(text)
    }
    for (const text of ["svc_wk_", "svc_wk_…", "svc_wk_ alone", "svc_xx_abc", "lab-1", "svc_wk", "svc_jk_", "svc_jk_…"]) {
      expect(holdsSecret(text), text).toBe(false)
      expect(withoutSecrets(text), text).toBe(text)
    }
  })

  it("are recognised by their shape", () => {
    expect(secretKindOf(makeCredential(bytes(6, 30)))).toBe("credential")
    expect(secretKindOf(` svc_jt_abc`)).toBe("join token")
    expect(secretKindOf("lab-1")).toBeUndefined()
  })
})
