/** Where the owner's SQLite store lives: `$SVC_HOME/svc.sqlite`. */
import { statSync } from "node:fs"
import * as nodePath from "node:path"

export const STORE_FILE = "svc.sqlite"
export const storePath = (home: string) => nodePath.join(home, STORE_FILE)

/** A file's size, or undefined when it is not there (or cannot be looked at). */
export const sizeOf = (path: string): number | undefined => {
  try {
    return statSync(path).size
  } catch {
    return undefined
  }
}

/**
 * Why the store `filename` must not be opened, or undefined: its `-wal` holds commits, and the file
 * itself is missing or empty (0 bytes). SQLite, opening it (even read-only), takes such a -wal for
 * one left from another database and discards it without a word, and with it the journal's last
 * commits: the journal commands read it as an empty journal (the -wal gone after the first), and
 * `svc serve` started a new journal over it. A copy made of the wrong file, or with its main file
 * lost: said, and left as it is.
 */
export const walWithoutStore = (filename: string): string | undefined => {
  const wal = sizeOf(`${filename}-wal`)
  if (wal === undefined || wal === 0) return undefined
  const main = sizeOf(filename)
  if (main !== undefined && main > 0) return undefined
  return `${main === undefined ? `there is no ${filename}` : `${filename} is an empty file (0 bytes)`}, but there is ${filename}-wal (${wal.toLocaleString("en-US")} bytes), which holds only the journal's last commits, and which SQLite would discard on opening it: copy svc.sqlite with it (docs/operations.md, "Backups"); nothing was opened or changed`
}
