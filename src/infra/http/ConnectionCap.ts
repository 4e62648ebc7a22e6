/**
 * How many connections the worker route holds at once. Past it, a new connection is closed as it
 * arrives (the caller retries, as a worker does), so that callers on the route, authenticated or
 * not, cannot take every file descriptor of the process: the journal, a job's pipes and output
 * files, and the admin socket the operator's CLI uses need theirs. Half the process's limit of
 * open files, at most 8,192 (each TLS connection costs some 50 KB of memory), at least 256.
 * An svc worker holds one to three connections to its owner.
 */
import { readFileSync } from "node:fs"

export const MAX_CONNECTIONS_CEILING = 8_192
export const MAX_CONNECTIONS_FLOOR = 256
/** Where the limit of open files cannot be read (no /proc). */
export const MAX_CONNECTIONS_UNKNOWN_LIMIT = 4_096

/** The soft limit of open files in the text of /proc/PID/limits, or undefined ("unlimited", absent). */
export const openFilesLimitIn = (limits: string): number | undefined => {
  const line = limits.split("\n").find((l) => l.startsWith("Max open files"))
  const soft = line === undefined ? undefined : /^Max open files\s+(\d+)\s/.exec(line)?.[1]
  return soft === undefined ? undefined : Number(soft)
}

/** The route's connection cap for a process allowed `openFiles` descriptors (undefined: not known). */
export const connectionCapFor = (openFiles: number | undefined): number =>
  openFiles === undefined ? MAX_CONNECTIONS_UNKNOWN_LIMIT : Math.max(MAX_CONNECTIONS_FLOOR, Math.min(MAX_CONNECTIONS_CEILING, Math.floor(openFiles / 2)))

/** This process's cap. */
export const connectionCap = (): number => {
  let limits: string | undefined
  try {
    limits = readFileSync("/proc/self/limits", "utf8")
  } catch {
    limits = undefined
  }
  return connectionCapFor(limits === undefined ? undefined : openFilesLimitIn(limits))
}
