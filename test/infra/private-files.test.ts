/** Directories and files private to this user: what another user owns or may write to is refused, and a file is never written through one found there. */
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { makePrivateDir, NotPrivate, notPrivateBecause, writePrivateFile } from "../../src/infra/PrivateFiles.js"
import { unsafeHomeProblem } from "../../src/infra/runtime/HomeStart.js"
import { removeLink, rewriteLink, writeLink } from "../../src/infra/workers/LinkStore.js"
import { tempDir } from "../support/svc.js"

const dir = (uid: number, mode: number) => ({ uid, mode: 0o40000 | mode, isDirectory: () => true, isSymbolicLink: () => false })

describe("private directories and files", () => {
  it("say why a directory is not private: a link, not a directory, another user's, or open to others", () => {
    expect(notPrivateBecause(dir(1000, 0o700), 1000)).toBeUndefined()
    expect(notPrivateBecause(dir(1000, 0o700), undefined)).toBeUndefined()
    expect(notPrivateBecause(dir(0, 0o700), 1000)).toBe("it belongs to uid 0, not to this user (uid 1000)")
    expect(notPrivateBecause(dir(1000, 0o750), 1000)).toBe("other users may use it (mode 0750)")
    expect(notPrivateBecause(dir(1000, 0o1777), 1000)).toBe("other users may use it (mode 1777)")
    expect(notPrivateBecause({ ...dir(1000, 0o700), isSymbolicLink: () => true }, 1000)).toBe("it is a symbolic link")
    expect(notPrivateBecause({ ...dir(1000, 0o600), isDirectory: () => false }, 1000)).toBe("it is not a directory")
  })

  it("refuse a home every user may write to or another user owns, naming it and what to do", () => {
    expect(unsafeHomeProblem("/h", { uid: 1000, mode: 0o40700 }, 1000)).toBeUndefined()
    expect(unsafeHomeProblem("/h", { uid: 1000, mode: 0o40755 }, 1000)).toBeUndefined()
    expect(unsafeHomeProblem("/h", { uid: 1000, mode: 0o41777 }, 1000)).toBe(
      "/h (SVC_HOME) is writable by every user (mode 1777), who could replace its admin socket, journal or secrets: chmod 700 /h"
    )
    expect(unsafeHomeProblem("/h", { uid: 65534, mode: 0o40700 }, 0)).toBe(
      "/h (SVC_HOME) belongs to uid 65534, not to this user (uid 0), who could replace its admin socket, journal or secrets: run svc as the user it belongs to, or use a home of your own"
    )
  })

  it("make a missing directory 0700, and refuse one open to other users", async () => {
    const base = tempDir("svc-private-")
    await makePrivateDir(join(base, "made"))
    expect(statSync(join(base, "made")).mode & 0o777).toBe(0o700)
    mkdirSync(join(base, "open"))
    chmodSync(join(base, "open"), 0o777)
    await expect(makePrivateDir(join(base, "open"))).rejects.toThrow(NotPrivate)
    await expect(makePrivateDir(join(base, "open"))).rejects.toThrow(`${join(base, "open")} is not a directory private to this user: other users may use it (mode 0777)`)
  })

  it("write a file 0600 whole, through a temporary file of their own, leaving nothing else behind", async () => {
    const base = tempDir("svc-private-")
    const file = join(base, "note.json")
    writeFileSync(file, "old")
    chmodSync(file, 0o644)
    await writePrivateFile(file, "new")
    expect(readFileSync(file, "utf8")).toBe("new")
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(readdirSync(base)).toEqual(["note.json"])
  })

  it("keep a link's credential out of a links directory others may use: it was written there, readable by them", async () => {
    const home = tempDir("svc-private-home-")
    mkdirSync(join(home, "links"))
    chmodSync(join(home, "links"), 0o777)
    const link = { url: "https://owner:7443", fingerprint: "f".repeat(64), certificate: "PEM", workerId: "w1", name: "lab-1", credential: "svc_wk_x", joinedAt: "2026-11-25T00:00:00.000Z" }
    await expect(writeLink(home, link)).rejects.toThrow(/links is not a directory private to this user: other users may use it \(mode 0777\)/)
    expect(readdirSync(join(home, "links"))).toEqual([])
  })
})

describe("a link's file changed by a runtime", () => {
  const link = { url: "https://owner.lan:7443", fingerprint: "f1", certificate: "C", workerId: "w1", name: "lab", credential: "old", joinedAt: "2026-11-26T00:00:00Z" }

  it("is changed in place, what else it holds kept; one removed meanwhile stays removed; one of another identity is left as it is", async () => {
    const home = tempDir("svc-rewrite-")
    const key = await writeLink(home, link)
    expect(await rewriteLink(home, key, "w1", (now) => ({ ...now, credential: "new" }))).toBe(true)
    expect(JSON.parse(readFileSync(join(home, "links", `${key}.json`), "utf8"))).toEqual({ ...link, credential: "new" })
    // A join again wrote another identity there: a credential for the old one does not go into it.
    await writeLink(home, { ...link, workerId: "w2", credential: "theirs" }, key)
    expect(await rewriteLink(home, key, "w1", (now) => ({ ...now, credential: "mine" }))).toBe(false)
    expect(JSON.parse(readFileSync(join(home, "links", `${key}.json`), "utf8")).credential).toBe("theirs")
    // Left (svc workers leave removed it): not brought back.
    await removeLink(home, key)
    expect(await rewriteLink(home, key, "w2", (now) => ({ ...now, fingerprint: "f2" }))).toBe(false)
    expect(readdirSync(join(home, "links"))).toEqual([])
  })

  it("a private file that cannot be renamed into place (a directory there) leaves no temporary file behind", async () => {
    const dir = tempDir("svc-private-tmp-")
    mkdirSync(join(dir, "journal.mark"))
    for (let i = 0; i < 3; i++) await expect(writePrivateFile(join(dir, "journal.mark"), "x")).rejects.toThrow()
    expect(readdirSync(dir)).toEqual(["journal.mark"])
  })
})
