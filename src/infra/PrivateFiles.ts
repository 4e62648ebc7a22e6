/**
 * Directories and files only this user may use: where svc keeps what must not be read or
 * replaced by another local user (a link's credential, a session's key, bundled job code). A
 * directory found there that another user owns or may write to is refused, not used: whoever
 * owns it could read what is written into it, or put a file in its place. A file is written
 * through a temporary file made for the purpose (O_EXCL: never one found there, whoever put it)
 * and renamed into place, so that a reader sees the old content or the new, never half.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import { makeDirectory } from "./MakeDirectory.js"

/** A file's permission bits as `ls -l` and chmod read them: `0755`, `1777` (pass what to show). */
export const modeText = (mode: number): string => mode.toString(8).padStart(4, "0")

/** This process's user id, where the system has them. */
export const currentUid = (): number | undefined => (typeof process.getuid === "function" ? process.getuid() : undefined)

export interface StatLike {
  readonly uid: number
  readonly mode: number
  isDirectory(): boolean
  isSymbolicLink(): boolean
}

/** Why a directory (as `lstat` gives it) is not private to user `uid`, or undefined. */
export const notPrivateBecause = (stat: StatLike, uid: number | undefined): string | undefined => {
  if (stat.isSymbolicLink()) return "it is a symbolic link"
  if (!stat.isDirectory()) return "it is not a directory"
  if (uid !== undefined && stat.uid !== uid) return `it belongs to uid ${stat.uid}, not to this user (uid ${uid})`
  if ((stat.mode & 0o077) !== 0) return `other users may use it (mode ${modeText(stat.mode & 0o7777)})`
  return undefined
}

export class NotPrivate extends Error {}

/** Makes `dir` (0700) when missing; refuses one that is not private to this user (NotPrivate). */
export const makePrivateDir = async (dir: string): Promise<void> => {
  await makeDirectory(dir, 0o700)
  const why = notPrivateBecause(await fs.lstat(dir), currentUid())
  if (why !== undefined) throw new NotPrivate(`${dir} is not a directory private to this user: ${why}; another user could read or replace what svc keeps there`)
}

/** Writes `file` whole, mode 0600, through a temporary file of its own renamed into place. */
export const writePrivateFile = async (file: string, contents: string | Uint8Array): Promise<void> => {
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`
  const handle = await fs.open(temporary, "wx", 0o600)
  try {
    await handle.writeFile(contents)
  } catch (e) {
    await handle.close()
    await fs.rm(temporary, { force: true })
    throw e
  }
  await handle.close()
  // Not renamed into place (the path is a directory, say): the temporary file goes, not left beside it at each try.
  await fs.rename(temporary, file).catch(async (e: unknown) => {
    await fs.rm(temporary, { force: true })
    throw e
  })
}
