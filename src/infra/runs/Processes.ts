/**
 * What Linux says of a process in /proc/PID/stat: its start time (which tells a process from
 * another given its pid since), its parent, group and session. Where /proc cannot be read (not
 * Linux), nothing is known and callers act on nothing.
 */
import * as fs from "node:fs"

export interface ProcessStat {
  readonly pid: number
  readonly parent: number
  readonly group: number
  /** The start time in clock ticks since boot (field 22): with the pid, who the process is. */
  readonly start: string
}

/** The fields of /proc/PID/stat after the command name, or null if it is gone, a zombie, or unknown here. */
const fieldsOf = (pid: number): ReadonlyArray<string> | null => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name (field 2) is in parentheses and may hold spaces and parentheses itself.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return fields[0] === "Z" || fields[0] === "X" ? null : fields
  } catch {
    return null
  }
}

/**
 * The start time of process `pid` (/proc/PID/stat, field 22), or null if it is gone or unknown
 * here. A zombie (state Z, or X) is gone: it has ended, and only waits for its parent to read
 * its status. A killed runtime whose parent does not reap it at once (a shell that execs another
 * program, an init that is slow to) kept its pid and start time, was taken for alive, and the
 * jobs it left ran on beside their runs placed again.
 */
export const startTimeOf = (pid: number): string | null => fieldsOf(pid)?.[19] ?? null

/** What /proc says of a live process, or null if it is gone, a zombie, or unknown here. */
export const processStat = (pid: number): ProcessStat | null => {
  const fields = fieldsOf(pid)
  const start = fields?.[19]
  return fields === null || start === undefined ? null : { pid, parent: Number(fields[1]), group: Number(fields[2]), start }
}

/** Every live process of this machine (that this one may read), by pid; null where /proc is not there. */
const everyProcessKnown = (): ReadonlyArray<ProcessStat> | null => {
  let names: ReadonlyArray<string>
  try {
    names = fs.readdirSync("/proc")
  } catch {
    return null
  }
  const all: Array<ProcessStat> = []
  for (const name of names) {
    const pid = Number(name)
    if (!Number.isInteger(pid) || pid <= 0) continue
    const stat = processStat(pid)
    if (stat !== null) all.push(stat)
  }
  return all
}

/** The same, empty where /proc is not there. */
const everyProcess = (): ReadonlyArray<ProcessStat> => everyProcessKnown() ?? []

/**
 * Whether process group `pgid` has a member that has not ended (a zombie has: signal 0 to the
 * group still reaches one until its parent reaps it, which an adopting init may do late), or null
 * where /proc cannot tell.
 */
export const groupRuns = (pgid: number): boolean | null => {
  const all = everyProcessKnown()
  return all === null ? null : all.some((p) => p.group === pgid)
}

/**
 * The processes descended from the `roots` (children, their children, ...), as they are now:
 * what a job started, wherever it went since: into a process group or a session of its own
 * (`setsid`), which signalling the job's group does not reach. A descendant whose parent has
 * exited was given to init, and is no longer found from here: what a stop follows is taken
 * while the job runs, and kept.
 */
export const descendantsOf = (roots: Iterable<number>): ReadonlyArray<ProcessStat> => {
  const children = new Map<number, Array<ProcessStat>>()
  for (const p of everyProcess()) {
    const siblings = children.get(p.parent)
    if (siblings === undefined) children.set(p.parent, [p])
    else siblings.push(p)
  }
  const found: Array<ProcessStat> = []
  const seen = new Set<number>()
  const queue = [...roots]
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    for (const child of children.get(pid) ?? []) {
      if (seen.has(child.pid)) continue
      seen.add(child.pid)
      found.push(child)
      queue.push(child.pid)
    }
  }
  return found
}
