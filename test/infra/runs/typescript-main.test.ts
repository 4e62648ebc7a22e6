/** The TypeScript bundle cache (TypeScriptMain.ts): one entry per main in use, not one per install or edit. */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { bundle } from "../../../src/infra/runs/TypeScriptMain.js"

const bagWith = (root: string, name: string, text: string) => {
  const dir = join(root, name)
  mkdirSync(join(dir, "jobs"), { recursive: true })
  const main = join(dir, "jobs", "main.ts")
  writeFileSync(main, `const greeting: string = ${JSON.stringify(text)}\nexport default greeting\n`)
  return { dir, main }
}
const bundles = (cache: string) => readdirSync(cache).filter((f) => f.endsWith(".mjs")).length
const entries = (cache: string) => readdirSync(cache).filter((f) => f.endsWith(".inputs.json")).length

describe("the TypeScript bundle cache", () => {
  it("drops an entry once its main is edited or gone (a bag version removed): it grew by a bundle per install for the machine's life", async () => {
    const root = mkdtempSync(join(tmpdir(), "svc-ts-cache-test-"))
    const cache = join(root, "cache")
    const a = bagWith(root, "a-1.0.0", "one")
    const b = bagWith(root, "b-1.0.0", "other")
    await Effect.runPromise(bundle(a.main, a.dir, cache))
    await Effect.runPromise(bundle(b.main, b.dir, cache))
    expect([bundles(cache), entries(cache)]).toEqual([2, 2])
    // Used again unchanged: nothing built, nothing dropped.
    await Effect.runPromise(bundle(a.main, a.dir, cache))
    expect(bundles(cache)).toBe(2)
    // a's main edited (a new mtime and size): its old entry can never be used again.
    writeFileSync(a.main, `const greeting: string = "two, edited"\nexport default greeting\n`)
    utimesSync(a.main, new Date(Date.now() + 5_000), new Date(Date.now() + 5_000))
    await Effect.runPromise(bundle(a.main, a.dir, cache))
    expect([bundles(cache), entries(cache)]).toEqual([2, 2])
    // b's version removed: dropped at the next build.
    rmSync(b.dir, { recursive: true })
    const c = bagWith(root, "c-1.0.0", "three")
    await Effect.runPromise(bundle(c.main, c.dir, cache))
    expect([bundles(cache), entries(cache)]).toEqual([2, 2])
    rmSync(root, { recursive: true, force: true })
  })
})
