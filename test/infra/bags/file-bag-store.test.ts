/** The bag store on the file system: what it takes for a bag not installed, and what for a failure to read. */
import { mkdirSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import * as FileBagStore from "../../../src/infra/bags/FileBagStore.js"

describe("the bag store on disk", () => {
  it("has no bag where there is none, and no store at all is empty", async () => {
    const home = mkdtempSync(join(tmpdir(), "svc-bag-store-"))
    const store = FileBagStore.make(home)
    expect(await Effect.runPromise(store.list)).toEqual([])
    expect(await Effect.runPromise(store.get("hello"))).toBeUndefined()
  })

  it("says an install record it cannot read, instead of taking the bag for not installed", async () => {
    // Too many open files (EMFILE) cannot be made here; a record that is a directory (EISDIR) fails to read alike.
    const home = mkdtempSync(join(tmpdir(), "svc-bag-store-"))
    mkdirSync(join(home, "bags", "hello", "install.json"), { recursive: true })
    const store = FileBagStore.make(home)
    const failed = await Effect.runPromise(Effect.flip(store.get("hello")))
    expect(failed).toMatchObject({ reason: "Io", message: "reading bag hello: EISDIR: illegal operation on a directory, read" })
    // A listing leaves it out: one unreadable entry hid every bag from a worker's offer.
    expect(await Effect.runPromise(store.list)).toEqual([])
  })
})
