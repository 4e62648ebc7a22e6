/**
 * A worker's session kept across a crash of its own process (src/infra/workers/SessionMemory.ts):
 * real files; bound to this home on this boot, so a copy does not resume it.
 */
import { cpSync, mkdirSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { bindingFrom, forgetSession, sessionMemoryAt, sessionsDir } from "../../../src/infra/workers/SessionMemory.js"
import { readLinks, removeLink, writeLink } from "../../../src/infra/workers/LinkStore.js"
import { tempDir } from "../../support/svc.js"

const bootFile = (id: string) => {
  const file = join(tempDir("svc-boot-"), "boot_id")
  writeFileSync(file, `${id}\n`)
  return file
}

describe("a worker's session kept across a crash", () => {
  it("is read back by the next process on this home and boot, 0600, and goes with its link", async () => {
    const home = tempDir("svc-sessions-")
    const boot = bootFile("b-1")
    await Effect.runPromise(sessionMemoryAt(home, "k1", boot).save({ fence: 7, key: "secret-session-key" }))
    expect(await Effect.runPromise(sessionMemoryAt(home, "k1", boot).load)).toEqual({ fence: 7, key: "secret-session-key" })
    expect(statSync(join(sessionsDir(home), "k1.json")).mode & 0o777).toBe(0o600)
    // Another link of the same home has its own.
    expect(await Effect.runPromise(sessionMemoryAt(home, "k2", boot).load)).toBeUndefined()
    await forgetSession(home, "k1")
    expect(await Effect.runPromise(sessionMemoryAt(home, "k1", boot).load)).toBeUndefined()
  })

  it("is not resumed by a copy of the home elsewhere, nor after a reboot, and is not kept where the boot cannot be told", async () => {
    const home = tempDir("svc-sessions-")
    const boot = bootFile("b-1")
    await Effect.runPromise(sessionMemoryAt(home, "k1", boot).save({ fence: 3, key: "k" }))
    const copy = join(tempDir("svc-sessions-copy-"), "home")
    cpSync(home, copy, { recursive: true })
    expect(await Effect.runPromise(sessionMemoryAt(copy, "k1", boot).load)).toBeUndefined()
    expect(await Effect.runPromise(sessionMemoryAt(home, "k1", bootFile("b-2")).load)).toBeUndefined()
    const elsewhere = tempDir("svc-sessions-")
    mkdirSync(elsewhere, { recursive: true })
    const noBoot = join(elsewhere, "no-such-boot-id")
    await Effect.runPromise(sessionMemoryAt(elsewhere, "k1", noBoot).save({ fence: 1, key: "k" }))
    expect(await Effect.runPromise(sessionMemoryAt(elsewhere, "k1", noBoot).load)).toBeUndefined()
  })
})

describe("the binding of a home", () => {
  it("differs when any of boot, path, device or inode does (two containers' overlays share path and inode, not device)", () => {
    const base = bindingFrom("boot-1", { realPath: "/svc", dev: 39, ino: 2990082 })
    // The form the fourteenth session's files were written with: an upgrade keeps a crash restart a resume.
    expect(base).toBe("c79452bd6d7edc7e8020999f4b1f9c5a0500372eb00400b60c49ee61dc3a4d07")
    expect(bindingFrom("boot-1", { realPath: "/svc", dev: 39, ino: 2990082 })).toBe(base)
    for (const other of [bindingFrom("boot-2", { realPath: "/svc", dev: 39, ino: 2990082 }), bindingFrom("boot-1", { realPath: "/svc2", dev: 39, ino: 2990082 }), bindingFrom("boot-1", { realPath: "/svc", dev: 41, ino: 2990082 }), bindingFrom("boot-1", { realPath: "/svc", dev: 39, ino: 1 })]) {
      expect(other).not.toBe(base)
    }
  })
})

describe("a link removed (svc workers leave)", () => {
  it("is removed even when its session note cannot be: the note goes best effort, and the removal is not said to have failed", async () => {
    const home = tempDir("svc-remove-link-")
    const link = { url: "https://owner:7443", fingerprint: "ab".repeat(32), certificate: "-", workerId: "w1", name: "lab-1", credential: "c", joinedAt: "2026-11-26T00:00:00.000Z" }
    const key = await writeLink(home, link)
    // A note that cannot be removed (here a directory in its place; a read-only sessions/ on a real machine).
    mkdirSync(join(sessionsDir(home), `${key}.json`, "x"), { recursive: true })
    await expect(removeLink(home, key)).resolves.toBeUndefined()
    expect(await readLinks(home)).toEqual([])
  })
})
