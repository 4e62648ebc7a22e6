/**
 * How many connections the worker route holds at once. Past it, a new connection is closed as it
 * arrives (the caller retries, as a worker does), so that callers on the route, authenticated or
 * not, cannot take every file descriptor of the process: the journal, a job's pipes and output
 * files, and the admin socket the operator's CLI uses need theirs. Half the process's limit of
 * open files less RESERVED_FILES (what the runtime holds at rest, and some), at most 8,192 (each
 * TLS connection costs some 50 KB of memory), at least 16. (It was at least 256: under a limit
 * of 64 the route's connections took every descriptor, and the operator's CLI got EPIPE from an
 * owner that said nothing.) An svc worker holds one to three connections to its owner.
 */
import { readFileSync } from "node:fs"

export const MAX_CONNECTIONS_CEILING = 8_192
export const MAX_CONNECTIONS_FLOOR = 16
/** What the runtime holds open besides the route's connections (about 30 at rest), with room for a job or two and the CLI. */
export const RESERVED_FILES = 64
/** A limit of open files under this one is said at start (docs/operations.md, "Open files"). */
export const LOW_OPEN_FILES = 1_024
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
  openFiles === undefined ? MAX_CONNECTIONS_UNKNOWN_LIMIT : Math.max(MAX_CONNECTIONS_FLOOR, Math.min(MAX_CONNECTIONS_CEILING, Math.floor((openFiles - RESERVED_FILES) / 2)))

/** This process's limit of open files (its soft limit), or undefined where it cannot be read or has none. */
export const openFilesLimit = (): number | undefined => {
  try {
    return openFilesLimitIn(readFileSync("/proc/self/limits", "utf8"))
  } catch {
    return undefined
  }
}

/** This process's cap. */
export const connectionCap = (): number => connectionCapFor(openFilesLimit())
