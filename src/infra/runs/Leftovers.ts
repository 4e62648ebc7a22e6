/**
 * Jobs a runtime that died uncleanly left running. Each child runs in a process group of its own
 * (so that a stop reaches what it started), which also means nothing stops it when `svc serve` is
 * killed (SIGKILL, an out-of-memory kill, a power cut of the process): it runs on beside the
 * attempt placed again in its stead, and the machine's slots are overcommitted. So every child
 * is noted in `$SVC_HOME/children/<pid>` while it runs (its start time, and what it is), and a
 * runtime that starts stops whatever a note still names before it runs anything: its owner's
 * "ceased" and its worker's hello then tell the truth (docs/executors.md, "When svc is killed").
 *
 * A note is acted on only when it is this home's own and its runtime is gone: it names the
 * runtime that wrote it (pid and start time) and the home (real path, device, inode), so a copy
 * of a running home, started elsewhere, neither stops the live runtime's jobs nor the jobs of the
 * home it was copied from. And only the process noted is stopped: same pid and the same start
 * time (Linux: /proc/PID/stat), so a pid the system gave to another process since is left alone;
 * a job whose own process has exited has its process group stopped if it still has members (the
 * system gives no new process the id of a group that still exists). Where the start time cannot
 * be read, nothing is stopped, and the log says so.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { identityOf, identityText } from "../SvcHome.js"
import { groupRuns, startTimeOf } from "./Processes.js"

export interface Leftover {
  readonly pid: number
  /** The runtime that started it (its pid and start time): a note of a live runtime is not acted on. */
  readonly runtime?: { readonly pid: number; readonly start: string | null }
  /** The home it was noted in (real path, device, inode): a note copied from another home is not acted on. */
  readonly home?: string
  /** The process's start time in clock ticks since boot (/proc/PID/stat, field 22); null where unknown. */
  readonly start: string | null
  /** What it is: the job's or check's name. */
  readonly name: string
  /** When it was started (epoch ms). */
  readonly at: number
}

export interface LeftoverNotes {
  /** Notes a child just started. */
  readonly add: (pid: number, name: string, at: number) => void
  /** The child has exited: its note goes. */
  readonly remove: (pid: number) => void
}

/** What ties a note to the home (the parent of `dir`) it was written in. */
const homeOf = (dir: string): string | undefined => {
  const identity = identityOf(nodePath.dirname(dir))
  return identity === undefined ? undefined : identityText(identity)
}

/** Notes kept in `dir` (created when missing). A note that cannot be written is skipped: the job runs all the same. */
export const notesIn = (dir: string): LeftoverNotes => {
  let made = false
  let runtime: { readonly pid: number; readonly start: string | null } | undefined
  let home: string | undefined
  return {
    add: (pid, name, at) => {
      try {
        if (!made) fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
        made = true
        runtime ??= { pid: process.pid, start: startTimeOf(process.pid) }
        home ??= homeOf(dir)
        const note: Leftover = { pid, start: startTimeOf(pid), name, at, runtime, ...(home === undefined ? {} : { home }) }
        fs.writeFileSync(nodePath.join(dir, String(pid)), JSON.stringify(note), { mode: 0o600 })
      } catch {
        // The runtime goes on without it: only a later uncleanly killed runtime would miss it.
      }
    },
    remove: (pid) => {
      try {
        fs.unlinkSync(nodePath.join(dir, String(pid)))
      } catch {
        // Gone already.
      }
    }
  }
}

/** What became of one note at start. */
export type Reaped =
  | { readonly kind: "stopped"; readonly note: Leftover }
  | { readonly kind: "unverifiable"; readonly note: Leftover }

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * Whether a process group with this id still has members that have not ended: read from /proc
 * (signal 0 to the group also reaches zombies, and a job killed by a runtime that then ended is
 * one until whoever adopts it reaps it: it was "stopped" again at the next start, after waiting
 * the whole grace), else signal 0 to the group, as `alive` to a process.
 */
const groupAlive = (pgid: number): boolean => groupRuns(pgid) ?? alive(-pgid)

/** `signal` to the process group `pid` leads, else to the process alone; answers whether either was there to signal. */
export const signalGroup = (pid: number, signal: NodeJS.Signals): boolean => {
  try {
    process.kill(-pid, signal)
    return true
  } catch {
    try {
      process.kill(pid, signal)
      return true
    } catch {
      // Gone.
      return false
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Stops the process groups of the children the notes in `dir` name that still run as noted
 * (SIGTERM, then SIGKILL after `graceMs`), and removes every note. Answers what it found.
 */
export const reap = async (dir: string, graceMs: number): Promise<ReadonlyArray<Reaped>> => {
  let names: Array<string>
  try {
    names = fs.readdirSync(dir)
  } catch {
    return []
  }
  const found: Array<Reaped> = []
  const stopping: Array<Leftover> = []
  // The notes of the children being stopped go only once they are (SIGKILL sent): a runtime ended
  // during the grace (a second Ctrl-C) leaves them for the next start, which stops them then.
  const stoppingNotes: Array<string> = []
  const here = homeOf(dir)
  for (const name of names) {
    const file = nodePath.join(dir, name)
    let note: Leftover | undefined
    try {
      const parsed = JSON.parse(fs.readFileSync(file, "utf8")) as Partial<Leftover>
      if (typeof parsed.pid === "number" && Number.isInteger(parsed.pid) && parsed.pid > 1) {
        const runtime = parsed.runtime
        note = {
          pid: parsed.pid,
          start: typeof parsed.start === "string" ? parsed.start : null,
          name: String(parsed.name ?? "a job"),
          at: Number(parsed.at ?? 0),
          ...(typeof runtime?.pid === "number" ? { runtime: { pid: runtime.pid, start: typeof runtime.start === "string" ? runtime.start : null } } : {}),
          ...(typeof parsed.home === "string" ? { home: parsed.home } : {})
        }
      }
    } catch {
      note = undefined
    }
    if (note === undefined) {
      fs.rmSync(file, { force: true })
      continue
    }
    // A note of a runtime that still runs (a copy of this running home, an older note naming no
    // home) is not this runtime's to act on now: kept, a later start judges it once that one is gone.
    if ((note.home === undefined || note.home === here) && runtimeRuns(note)) continue
    const before = stopping.length
    found.push(...judged(note, here, stopping))
    if (stopping.length > before) stoppingNotes.push(file)
    else fs.rmSync(file, { force: true })
  }
  for (const note of stopping) signalGroup(note.pid, "SIGTERM")
  const deadline = Date.now() + graceMs
  while (stopping.some((n) => groupAlive(n.pid)) && Date.now() < deadline) await sleep(50)
  // SIGKILL to every group, whether its leader left or not: what it started may linger.
  for (const note of stopping) signalGroup(note.pid, "SIGKILL")
  for (const file of stoppingNotes) fs.rmSync(file, { force: true })
  for (const note of stopping) found.push({ kind: "stopped", note })
  return found
}

/** Whether the runtime that wrote the note still runs (its pid, with the start time noted). */
const runtimeRuns = (note: Leftover): boolean => note.runtime !== undefined && note.runtime.start !== null && startTimeOf(note.runtime.pid) === note.runtime.start

/** What to do with one note: stop its child (pushed to `stopping`), say it cannot be verified, or nothing. */
const judged = (note: Leftover, here: string | undefined, stopping: Array<Leftover>): Array<Reaped> => {
  // Another home's note (this home is a copy of it): not this runtime's to act on.
  if (note.home !== undefined && note.home !== here) return []
  const now = startTimeOf(note.pid)
  if (note.start !== null && now !== null) {
    // The very process noted (not another one given its pid since): stopped.
    if (now === note.start) stopping.push(note)
  } else if (note.start !== null && now === null && groupAlive(note.pid)) {
    // Its own process is gone, what it started lives on in its group: no process can have been
    // given that id while the group exists, so the group is the job's.
    stopping.push(note)
  } else if (note.start === null && alive(note.pid)) {
    return [{ kind: "unverifiable", note }]
  }
  return []
}
