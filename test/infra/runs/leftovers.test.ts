/**
 * Children a killed runtime left running (src/infra/runs/Leftovers.ts): real processes, real
 * notes on disk; the next runtime stops those still running as noted, and nothing else.
 */
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { notesIn, reap, startTimeOf } from "../../../src/infra/runs/Leftovers.js"
import { tempDir } from "../../support/svc.js"

const started: Array<number> = []
afterEach(() => {
  for (const pid of started.splice(0)) {
    try {
      process.kill(-pid, "SIGKILL")
    } catch {
      // Gone.
    }
  }
})

/** A detached `sh` (a process group of its own, as a job's) that starts a `sleep` of its own. */
const orphanLike = async (): Promise<number> => {
  const child = spawn("sh", ["-c", "sleep 60 & wait"], { detached: true, stdio: "ignore" })
  child.unref()
  const pid = child.pid!
  started.push(pid)
  // Until its start time can be read (it has been exec'd).
  for (let i = 0; i < 50 && startTimeOf(pid) === null; i++) await new Promise((r) => setTimeout(r, 10))
  return pid
}
const gone = async (pid: number) => {
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(-pid, 0)
    } catch {
      return true
    }
    await new Promise((r) => setTimeout(r, 20))
  }
  return false
}

describe("children a killed runtime left", () => {
  it("are stopped with everything they started, and their notes removed", async () => {
    const dir = join(tempDir("svc-children-"), "children")
    const pid = await orphanLike()
    notesIn(dir).add(pid, "leftover:sleep@1.0.0", 1_700_000_000_000)
    expect(readdirSync(dir)).toEqual([String(pid)])
    const found = await reap(dir, 2_000)
    expect(found).toEqual([{ kind: "stopped", note: { pid, start: expect.any(String), name: "leftover:sleep@1.0.0", at: 1_700_000_000_000 } }])
    // The group: the shell and the sleep it started.
    expect(await gone(pid)).toBe(true)
    expect(readdirSync(dir)).toEqual([])
  })

  it("leave alone a process that is not the one noted (its pid given to another since), and forget a child that exited", async () => {
    const dir = join(tempDir("svc-children-"), "children")
    mkdirSync(dir, { recursive: true })
    const pid = await orphanLike()
    writeFileSync(join(dir, String(pid)), JSON.stringify({ pid, start: "1", name: "someone else's", at: 0 }))
    // A child that exited normally removes its own note; one noted and then gone is just forgotten.
    const notes = notesIn(dir)
    const short = spawn("true", [], { detached: true, stdio: "ignore" })
    await new Promise((r) => short.on("exit", r))
    notes.add(short.pid!, "gone", 0)
    writeFileSync(join(dir, "garbage"), "not json")
    expect(await reap(dir, 500)).toEqual([])
    expect(existsSync(`/proc/${pid}`)).toBe(true)
    expect(readdirSync(dir)).toEqual([])
  })

  it("a note is removed when its child exits", async () => {
    const dir = join(tempDir("svc-children-"), "children")
    const notes = notesIn(dir)
    const child = spawn("true", [], { detached: true, stdio: "ignore" })
    notes.add(child.pid!, "quick", 0)
    await new Promise((r) => child.on("exit", r))
    notes.remove(child.pid!)
    expect(readdirSync(dir)).toEqual([])
    expect(await reap(join(dir, "nowhere"), 100)).toEqual([])
  })
})
