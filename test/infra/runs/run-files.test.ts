/** An attempt's output files on the owner: what `svc runs show` reads of them. */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { afterAll, describe, expect, it } from "vitest"
import * as FileRunFiles from "../../../src/infra/runs/FileRunFiles.js"

const dir = mkdtempSync(join(tmpdir(), "svc-run-files-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const files = FileRunFiles.make(dir)
const run = <A>(e: Effect.Effect<A>) => Effect.runPromise(e)

describe("the end of an attempt's output", () => {
  it("is all of it when it fits, with nothing skipped; none yet is empty", async () => {
    expect(await run(files.tail("r1.1", "stdout", 100))).toEqual({ text: "", skipped: 0 })
    await run(files.append("r1.1", "stdout", "one\ntwo\n"))
    expect(await run(files.tail("r1.1", "stdout", 100))).toEqual({ text: "one\ntwo\n", skipped: 0 })
  })

  it("cut short, starts at a whole line and says how many bytes before it are not shown", async () => {
    const lines = Array.from({ length: 100 }, (_, i) => `line ${i} é\n`).join("")
    await run(files.append("r2.1", "stdout", lines))
    const end = await run(files.tail("r2.1", "stdout", 50))
    expect(end.text.startsWith("line ")).toBe(true)
    expect(lines.endsWith(end.text)).toBe(true)
    expect(end.skipped + Buffer.byteLength(end.text)).toBe(Buffer.byteLength(lines))
    expect(Buffer.byteLength(end.text)).toBeLessThanOrEqual(50)
  })

  it("with no line break in it, starts at a whole character", async () => {
    await run(files.append("r3.1", "stdout", "é".repeat(100)))
    const end = await run(files.tail("r3.1", "stdout", 51))
    expect(end.text).toBe("é".repeat(25))
    expect(end.skipped).toBe(150)
  })
})
