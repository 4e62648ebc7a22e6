/** What the owner remembers of the output it wrote per attempt on a worker, and that it stays bounded. */
import { describe, expect, it } from "vitest"
import { OutputMarks } from "../../../src/app/runs/OutputMarks.js"

describe("OutputMarks", () => {
  it("gives a piece sent again once, and puts back what a refused report changed", () => {
    const marks = new OutputMarks()
    const always = () => true
    expect(marks.newText("r1.1", "stdout", [0, 4], "abc\n", always)).toEqual({ text: "abc\n", start: 0 })
    const before = marks.snapshot("r1.1")
    // Sent again, longer: the rest, starting where the first ended.
    expect(marks.newText("r1.1", "stdout", [0, 8], "abc\ndef\n", always)).toEqual({ text: "def\n", start: 4 })
    marks.lose("r1.1", "disk full", always)
    expect(marks.lostWhy("r1.1")).toBe("disk full")
    marks.restore("r1.1", before)
    expect(marks.lostWhy("r1.1")).toBeUndefined()
    expect(marks.newText("r1.1", "stdout", [0, 8], "abc\ndef\n", always)).toEqual({ text: "def\n", start: 4 })
    expect(marks.newText("r1.1", "stdout", [8, 10], "g\n", always)).toEqual({ text: "g\n", start: 8 })
    marks.forget("r1.1")
    expect(marks.size).toBe(0)
  })

  it("drops the entries of attempts that no longer run once they have doubled: a worker that never calls again leaves none for good", () => {
    const marks = new OutputMarks()
    const running = new Set<string>()
    const stillRuns = (attempt: string) => running.has(attempt)
    // 10,000 attempts, each superseded after its first piece of output and never heard of again;
    // ten run on.
    for (let i = 0; i < 10_000; i++) {
      const id = `r${i}.1`
      running.add(id)
      marks.newText(id, "stdout", [0, 2], "x\n", stillRuns)
      if (i % 3 === 0) marks.lose(id, "disk full", stillRuns)
      if (i % 1000 !== 0) running.delete(id)
    }
    expect(marks.size).toBeLessThanOrEqual(2 * 64)
    // Those that run keep theirs.
    for (const id of running) expect(marks.newText(id, "stdout", [0, 2], "x\n", stillRuns).text).toBe("")
    expect(marks.lostWhy("r0.1")).toBe("disk full")
  })

  it("keeps every entry of attempts still running, however many", () => {
    const marks = new OutputMarks()
    for (let i = 0; i < 1_000; i++) marks.newText(`r${i}.1`, "stderr", [0, 1], "y", () => true)
    expect(marks.size).toBe(1_000)
  })
})
