/** An attempt's output files on the owner: what `svc runs show` reads of them. */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import { afterAll, describe, expect, it } from "vitest"
import * as FileRunFiles from "../../../src/infra/runs/FileRunFiles.js"

const dir = mkdtempSync(join(tmpdir(), "svc-run-files-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const files = FileRunFiles.make(dir)
const run = <A, E>(e: Effect.Effect<A, E>) => Effect.runPromise(e)

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

describe("reading output from an offset (a worker's deltas)", () => {
  it("ends on a whole character, and the next read starts where it stopped", async () => {
    const text = "aé€😀".repeat(50)
    await run(files.append("r4.1", "stdout", text))
    let offset = 0
    let got = ""
    for (const max of [5, 7, 6, 4, 9, 1000]) {
      const read = await run(files.readFrom("r4.1", "stdout", offset, max))
      expect(read.next - offset).toBeLessThanOrEqual(max)
      expect(read.next - offset).toBe(Buffer.byteLength(read.text))
      got += read.text
      offset = read.next
    }
    expect(got).toBe(text)
  })

  it("with invalid UTF-8 in the output, reads it all once and splits no valid character", async () => {
    // What a job may write: stray continuation bytes, a lone lead byte, bytes never valid.
    const bytes = Buffer.concat([Buffer.from("ok "), Buffer.from([0xff, 0x80, 0x80, 0xe2]), Buffer.from(" é\n"), Buffer.from([0xc3]), Buffer.from("z€")])
    const dir2 = mkdtempSync(join(tmpdir(), "svc-run-files-raw-"))
    writeFileSync(join(dir2, "r5.1.stdout"), bytes)
    const raw = FileRunFiles.make(dir2)
    for (const max of [1, 2, 3, 4, 5, 7]) {
      let offset = 0
      const pieces: Array<Buffer> = []
      let text = ""
      for (let reads = 0; offset < bytes.length && reads < 100; reads++) {
        const read = await run(raw.readFrom("r5.1", "stdout", offset, max))
        // A read may hold back the start of a character cut at its end, never more than 3 bytes.
        expect(read.next).toBeGreaterThanOrEqual(offset)
        pieces.push(bytes.subarray(offset, read.next))
        text += read.text
        if (read.next === offset) {
          expect(max).toBeLessThan(4)
          break
        }
        offset = read.next
      }
      if (max >= 4) {
        expect(offset).toBe(bytes.length)
        expect(Buffer.concat(pieces)).toEqual(bytes)
        // Each piece decoded alone reads as the whole does: "é" and "€" arrive whole.
        expect(text).toBe(bytes.toString("utf8"))
      }
    }
    rmSync(dir2, { recursive: true, force: true })
  })
})

describe("reading an attempt's output from an offset", () => {
  it("leaves a character cut at the end for the next read, but at the end of a job that has exited reads the last bytes as they are", async () => {
    const dir3 = mkdtempSync(join(tmpdir(), "svc-run-files-end-"))
    const bytes = Buffer.concat([Buffer.from('{"r":1}\n'), Buffer.from([0xe2, 0x82])])
    writeFileSync(join(dir3, "r6.1.stdout"), bytes)
    const raw = FileRunFiles.make(dir3)
    // Running: the job may yet write the rest of it.
    expect(await run(raw.readFrom("r6.1", "stdout", 0, 100))).toEqual({ text: '{"r":1}\n', next: 8 })
    expect(await run(raw.readFrom("r6.1", "stdout", 8, 100))).toEqual({ text: "", next: 8 })
    // Ended: nothing more comes; it was never read, and the worker's copy of the output lost it.
    expect(await run(raw.readFrom("r6.1", "stdout", 8, 100, true))).toEqual({ text: bytes.subarray(8).toString("utf8"), next: 10 })
    expect(await run(raw.readFrom("r6.1", "stdout", 0, 100, true))).toEqual({ text: bytes.toString("utf8"), next: 10 })
    // A read the limit cut still ends on a whole character: the rest comes next.
    expect(await run(raw.readFrom("r6.1", "stdout", 0, 9, true))).toEqual({ text: '{"r":1}\n', next: 8 })
    rmSync(dir3, { recursive: true, force: true })
  })
})

describe("writing output", () => {
  it("a write that fails says where and why, as a job's outcome says it", async () => {
    // A file where the directory should be: nothing can be written under it.
    const notADir = join(mkdtempSync(join(tmpdir(), "svc-run-files-bad-")), "runs")
    writeFileSync(notADir, "")
    const failed = await Effect.runPromise(Effect.flip(FileRunFiles.make(notADir).append("r7.1", "stdout", "lost\n")))
    expect(failed._tag).toBe("OutputNotKept")
    expect(failed.message).toMatch(new RegExp(`^its output could not be written to ${notADir}/r7\\.1\\.stdout: `))
  })

  it("what was appended after the sizes were taken can be taken back, stream by stream", async () => {
    await run(files.append("r8.1", "stdout", "kept\n"))
    const before = await run(files.sizes("r8.1"))
    expect(before).toEqual({ stdout: 5, stderr: 0 })
    await run(files.append("r8.1", "stdout", "taken back\n"))
    await run(files.append("r8.1", "stderr", "and this\n"))
    await run(files.truncate("r8.1", before))
    expect(await run(files.tail("r8.1", "stdout", 100))).toEqual({ text: "kept\n", skipped: 0 })
    expect(await run(files.tail("r8.1", "stderr", 100))).toEqual({ text: "", skipped: 0 })
  })
})

describe("the output limit on what the owner writes of a worker's output", () => {
  const limited = FileRunFiles.make(mkdtempSync(join(tmpdir(), "svc-run-files-limit-")), 1024)
  const notice = (atLineStart: boolean) => `${atLineStart ? "" : "\n"}[svc: output past the first 1 KiB of this stream was not kept (SVC_WORKFLOW_OUTPUT_LIMIT)]\n`
  const all = async (attempt: string, stream: "stdout" | "stderr" = "stdout") => (await run(limited.readFrom(attempt, stream, 0, 1 << 20, true))).text
  const within = { within: true }

  it("says its limit, and writes what it is given whole unless told otherwise", async () => {
    expect(limited.outputLimit).toBe(1024)
    await run(limited.append("r12.1", "stdout", "x".repeat(2000)))
    expect(await all("r12.1")).toBe("x".repeat(2000))
  })

  it("cut: the line follows the text, on a line of its own", async () => {
    await run(limited.append("r13.1", "stdout", "kept", { cut: true }))
    expect(await all("r13.1")).toBe(`kept${notice(false)}`)
    await run(limited.append("r14.1", "stdout", "a line\n"))
    await run(limited.append("r14.1", "stdout", "", { cut: true }))
    expect(await all("r14.1")).toBe(`a line\n${notice(true)}`)
    // Cut already (by a runtime before this one, which forgot it): nothing more, not a second line.
    await run(limited.append("r14.1", "stdout", "sent again", { cut: true }))
    expect(await all("r14.1")).toBe(`a line\n${notice(true)}`)
  })

  it("within: keeps each stream's first bytes up to the limit, then one line, whatever comes after", async () => {
    await run(limited.append("r9.1", "stdout", "x".repeat(1000), within))
    await run(limited.append("r9.1", "stdout", "é".repeat(20), within))
    expect(await all("r9.1")).toBe(`${"x".repeat(1000)}${"é".repeat(12)}${notice(false)}`)
    await run(limited.append("r9.1", "stdout", "more\n", within))
    expect(await all("r9.1")).toBe(`${"x".repeat(1000)}${"é".repeat(12)}${notice(false)}`)
    // The other stream has a limit of its own.
    await run(limited.append("r9.1", "stderr", "warn\n", within))
    expect(await all("r9.1", "stderr")).toBe("warn\n")
  })

  it("within: a stream exactly full is not cut until more comes, and the line then starts its own line", async () => {
    await run(limited.append("r10.1", "stdout", `${"y".repeat(1023)}\n`, within))
    expect(await all("r10.1")).toBe(`${"y".repeat(1023)}\n`)
    await run(limited.append("r10.1", "stdout", "z", within))
    expect(await all("r10.1")).toBe(`${"y".repeat(1023)}\n${notice(true)}`)
  })

  it("a report taken back takes its line back too, and the report sent again cuts the stream as before", async () => {
    await run(limited.append("r11.1", "stdout", "a".repeat(1000), within))
    const before = await run(limited.sizes("r11.1"))
    await run(limited.append("r11.1", "stdout", "b".repeat(100), within))
    await run(limited.truncate("r11.1", before))
    expect(await all("r11.1")).toBe("a".repeat(1000))
    await run(limited.append("r11.1", "stdout", "b".repeat(100), within))
    expect(await all("r11.1")).toBe(`${"a".repeat(1000)}${"b".repeat(24)}${notice(false)}`)
  })
})

describe("the runs whose output the owner removed as it forgot them", () => {
  it("are noted before their files go, one id per line (0600), and only those are said removed", async () => {
    const d = mkdtempSync(join(tmpdir(), "svc-run-files-removed-"))
    const owner = FileRunFiles.make(d)
    expect(await run(owner.wasRemoved("rA"))).toBe(false)
    await run(owner.append("rA.1", "stdout", "printed\n"))
    await run(owner.noteRemoved(["rA", "rB"]))
    await run(owner.noteRemoved([]))
    await run(owner.noteRemoved(["rC"]))
    expect(readFileSync(join(d, FileRunFiles.REMOVED_LIST), "utf8")).toBe("rA\nrB\nrC\n")
    expect(statSync(join(d, FileRunFiles.REMOVED_LIST)).mode & 0o777).toBe(0o600)
    expect(await run(owner.wasRemoved("rA"))).toBe(true)
    expect(await run(owner.wasRemoved("rC"))).toBe(true)
    // A whole id only: one that another begins with, or ends with, is not it.
    expect(await run(owner.wasRemoved("r"))).toBe(false)
    expect(await run(owner.wasRemoved("A"))).toBe(false)
    expect(await run(owner.wasRemoved("rD"))).toBe(false)
    // The list is not an attempt's output: the sweep that lists the attempts never sees (or removes) it.
    expect(await run(owner.attempts)).toEqual(["rA.1"])
    // Read by a later runtime of the same home.
    expect(await run(FileRunFiles.make(d).wasRemoved("rB"))).toBe(true)
    rmSync(d, { recursive: true, force: true })
  })

  it("keep the latest ones only, cut back once the list holds twice as many, by every runtime of the home", async () => {
    const d = mkdtempSync(join(tmpdir(), "svc-run-files-removed-cut-"))
    const ids = Array.from({ length: 13 }, (_, i) => `r${i}`)
    const first = FileRunFiles.make(d, undefined, 3)
    await run(first.noteRemoved(ids.slice(0, 4)))
    await run(first.noteRemoved(ids.slice(4, 6)))
    // Six: not yet more than twice three.
    expect(readFileSync(join(d, FileRunFiles.REMOVED_LIST), "utf8")).toBe(ids.slice(0, 6).map((r) => `${r}\n`).join(""))
    await run(first.noteRemoved([ids[6]!]))
    expect(readFileSync(join(d, FileRunFiles.REMOVED_LIST), "utf8")).toBe("r4\nr5\nr6\n")
    expect(await run(first.wasRemoved("r3"))).toBe(false)
    expect(await run(first.wasRemoved("r4"))).toBe(true)
    // A later runtime counts what the list holds before adding to it.
    const later = FileRunFiles.make(d, undefined, 3)
    await run(later.noteRemoved(ids.slice(7, 10)))
    expect(readFileSync(join(d, FileRunFiles.REMOVED_LIST), "utf8")).toBe(ids.slice(4, 10).map((r) => `${r}\n`).join(""))
    await run(later.noteRemoved(ids.slice(10, 13)))
    expect(readFileSync(join(d, FileRunFiles.REMOVED_LIST), "utf8")).toBe("r10\nr11\nr12\n")
    expect(readdirSync(d)).toEqual([FileRunFiles.REMOVED_LIST])
    rmSync(d, { recursive: true, force: true })
  })

  it("a list that cannot be written is said in a warning, and the caller goes on; one that cannot be read says nothing was removed", async () => {
    const d = mkdtempSync(join(tmpdir(), "svc-run-files-removed-bad-"))
    // A directory where the list should be: neither written nor read.
    mkdirSync(join(d, FileRunFiles.REMOVED_LIST))
    const owner = FileRunFiles.make(d)
    const logs: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) => void logs.push(`${logLevel.label} ${String(message)}`))
    await run(owner.noteRemoved(["rA"]).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger))))
    expect(logs).toEqual([expect.stringMatching(new RegExp(`^WARN the runs whose output is removed could not be noted in ${d}/removed-output \\(EISDIR`))])
    expect(await run(owner.wasRemoved("rA"))).toBe(false)
    rmSync(d, { recursive: true, force: true })
  })
})
