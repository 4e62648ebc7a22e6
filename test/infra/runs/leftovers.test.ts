/**
 * Children a killed runtime left running (src/infra/runs/Leftovers.ts): real processes, real
 * notes on disk; the next runtime stops those still running as noted, and nothing else: not a
 * process given the pid since, not the jobs of a runtime still running (a copy of a running
 * home), not a note copied from another home.
 */
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { notesIn, reap, type Leftover } from "../../../src/infra/runs/Leftovers.js"
import { startTimeOf } from "../../../src/infra/runs/Processes.js"
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

const until = async (ok: () => boolean, ms = 2_000) => {
  for (let t = 0; t < ms && !ok(); t += 10) await new Promise((r) => setTimeout(r, 10))
  return ok()
}

/** A detached shell (a process group of its own, as a job's), running `script`. */
const job = async (script: string): Promise<number> => {
  const child = spawn("sh", ["-c", script], { detached: true, stdio: "ignore" })
  child.unref()
  const pid = child.pid!
  started.push(pid)
  await until(() => startTimeOf(pid) !== null)
  return pid
}
const groupGone = (pgid: number) => {
  try {
    process.kill(-pgid, 0)
    return false
  } catch {
    return true
  }
}

/** A children directory in a home of its own, and the note a killed runtime of that home left. */
const homeDir = () => {
  const dir = join(tempDir("svc-children-"), "children")
  mkdirSync(dir, { recursive: true })
  return dir
}
/** A note as the runtime of this home wrote it, that runtime gone (its pid's start time is not the noted one). */
const leftBy = (dir: string, pid: number, over: Partial<Leftover> = {}) => {
  notesIn(dir).add(pid, "probe", 0)
  const written = JSON.parse(readFileSync(join(dir, String(pid)), "utf8")) as Leftover
  const note: Leftover = { ...written, name: "leftover:sleep@1.0.0", at: 1_700_000_000_000, runtime: { pid: written.runtime!.pid, start: "gone" }, ...over }
  writeFileSync(join(dir, String(pid)), JSON.stringify(note))
  return note
}

describe("children a killed runtime left", () => {
  it("are noted with the runtime that started them and the home they were started from", async () => {
    const dir = homeDir()
    const pid = await job("sleep 60")
    notesIn(dir).add(pid, "leftover:sleep@1.0.0", 1)
    expect(JSON.parse(readFileSync(join(dir, String(pid)), "utf8"))).toEqual({
      pid,
      start: startTimeOf(pid),
      name: "leftover:sleep@1.0.0",
      at: 1,
      runtime: { pid: process.pid, start: startTimeOf(process.pid) },
      home: expect.stringContaining("svc-children-")
    })
  })

  it("are stopped with everything they started once their runtime is gone, and their notes removed", async () => {
    const dir = homeDir()
    const pid = await job("sleep 60 & wait")
    const note = leftBy(dir, pid)
    expect(await reap(dir, 2_000)).toEqual([{ kind: "stopped", note }])
    expect(await until(() => groupGone(pid))).toBe(true)
    expect(readdirSync(dir)).toEqual([])
  })

  it("keep their note until the stop is done: a runtime ended during the grace (a second Ctrl-C) leaves it for the next start", async () => {
    const dir = homeDir()
    // Ignores SIGTERM: the stop waits out the grace, then SIGKILL. Reaped once its trap is set
    // (a loaded machine may start the shell late: a SIGTERM before its trap ended it).
    const ready = join(dir, "..", "ready")
    const pid = await job(`trap '' TERM; sleep 60 & echo > ${ready}; wait`)
    expect(await until(() => existsSync(ready), 10_000)).toBe(true)
    const note = leftBy(dir, pid)
    const reaping = reap(dir, 1_000)
    await new Promise((r) => setTimeout(r, 400))
    // In the grace: the child runs on, and its note is still there (it was removed first).
    expect(groupGone(pid)).toBe(false)
    expect(readdirSync(dir)).toEqual([String(pid)])
    expect(await reaping).toEqual([{ kind: "stopped", note }])
    expect(await until(() => groupGone(pid))).toBe(true)
    expect(readdirSync(dir)).toEqual([])
  })

  it("whose own process has exited have what they started stopped (the group lives on)", async () => {
    const dir = homeDir()
    const pid = await job("sleep 60 & sleep 0.3")
    leftBy(dir, pid)
    // The shell exits; the sleep it started keeps the group.
    expect(await until(() => startTimeOf(pid) === null, 3_000)).toBe(true)
    expect(groupGone(pid)).toBe(false)
    const found = await reap(dir, 2_000)
    expect(found.map((r) => r.kind)).toEqual(["stopped"])
    expect(await until(() => groupGone(pid))).toBe(true)
  })

  it("are left alone while the runtime that noted them runs (a copy of a running home), or when copied from another home", async () => {
    const dir = homeDir()
    const live = await job("sleep 60")
    // Noted by this very process, which runs: a copy of its home must not stop its jobs.
    notesIn(dir).add(live, "live:job@1.0.0", 0)
    const copied = await job("sleep 60")
    leftBy(dir, copied, { home: "/elsewhere\n1\n2" })
    expect(await reap(dir, 500)).toEqual([])
    expect(existsSync(`/proc/${live}`)).toBe(true)
    expect(existsSync(`/proc/${copied}`)).toBe(true)
    // The live runtime's note is kept for a start after it; the other home's is not this home's.
    expect(readdirSync(dir)).toEqual([String(live)])
  })

  it("are stopped when their runtime is a zombie: killed, but not yet reaped by its parent, it kept its pid and start time", async () => {
    const dir = homeDir()
    const pidFile = join(dir, "..", "runtime.pid")
    // The "runtime" is a child of a program that never reaps it (sh execs sleep).
    const parent = await job(`sleep 60 & echo $! > ${pidFile}; exec sleep 60`)
    expect(await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", 5_000)).toBe(true)
    const runtimePid = Number(readFileSync(pidFile, "utf8").trim())
    const runtimeStart = startTimeOf(runtimePid)
    expect(runtimeStart).not.toBeNull()
    const pid = await job("sleep 60")
    const note = leftBy(dir, pid, { runtime: { pid: runtimePid, start: runtimeStart } })
    process.kill(runtimePid, "SIGKILL")
    expect(await until(() => readFileSync(`/proc/${runtimePid}/stat`, "utf8").includes(") Z "), 5_000)).toBe(true)
    expect(startTimeOf(runtimePid)).toBeNull()
    expect(await reap(dir, 2_000)).toEqual([{ kind: "stopped", note }])
    expect(await until(() => groupGone(pid))).toBe(true)
    expect(readdirSync(dir)).toEqual([])
    process.kill(-parent, "SIGKILL")
  })

  it("are not stopped again when only zombies are left of their group (killed by a runtime that then ended, not yet reaped by whoever adopted them)", async () => {
    const dir = homeDir()
    const pidFile = join(dir, "..", "zombie.pid")
    // A parent that never reaps: its child makes a process group of its own and exits at once.
    const parent = spawn("perl", ["-e", 'my $p = fork(); if (!$p) { setpgrp(0, 0); exit 0 } open(my $f, ">", $ARGV[0]); print $f $p; close($f); sleep 60', pidFile], { detached: true, stdio: "ignore" })
    parent.unref()
    started.push(parent.pid!)
    expect(await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", 5_000)).toBe(true)
    const pid = Number(readFileSync(pidFile, "utf8").trim())
    expect(await until(() => readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z "), 5_000)).toBe(true)
    // Signal 0 to the group still reaches the zombie: that alone took the job for running.
    expect(groupGone(pid)).toBe(false)
    leftBy(dir, pid, { start: "1" })
    expect(await reap(dir, 2_000)).toEqual([])
    expect(readdirSync(dir)).toEqual([])
  })

  it("leave alone a process that is not the one noted (its pid given to another since), and forget a child that exited", async () => {
    const dir = homeDir()
    const pid = await job("sleep 60")
    leftBy(dir, pid, { start: "1" })
    const short = spawn("true", [], { detached: true, stdio: "ignore" })
    await new Promise((r) => short.on("exit", r))
    leftBy(dir, short.pid!, { start: "2" })
    writeFileSync(join(dir, "garbage"), "not json")
    expect(await reap(dir, 500)).toEqual([])
    expect(existsSync(`/proc/${pid}`)).toBe(true)
    expect(readdirSync(dir)).toEqual([])
  })

  it("a note is removed when its child exits", async () => {
    const dir = homeDir()
    const notes = notesIn(dir)
    const child = spawn("true", [], { detached: true, stdio: "ignore" })
    notes.add(child.pid!, "quick", 0)
    await new Promise((r) => child.on("exit", r))
    notes.remove(child.pid!)
    expect(readdirSync(dir)).toEqual([])
    expect(await reap(join(dir, "nowhere"), 100)).toEqual([])
  })
})
