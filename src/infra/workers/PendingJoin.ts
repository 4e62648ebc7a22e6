/**
 * The join key of a join whose answer has not arrived yet: `$SVC_HOME/links/<key>.join-key`,
 * mode 0600, one per owner and invite. `svc workers join` makes it (or finds it) before it
 * sends the join and removes it once the answer is kept or the owner refused, so a join whose
 * answer never came is answered again when it is run again with the same token
 * (docs/protocol.md, "A join whose answer never came"). Not a `.json` file: the runtime's link
 * watcher reads only those.
 *
 * One join at a time in a home: each holds the lock of `$SVC_HOME/join.lock` (a lock the kernel
 * keeps on the open file: ../FileLock.ts; the file is never removed, as serve.lock is not) while
 * it runs. Two at once shared the key: the one answered again wrote its link, then the other's
 * answer came and wrote over it a credential the answer again had taken away (the token spent,
 * the link dead); two tokens of one owner at once wrote one link file, and one worker was left
 * with no link. A pid in a file was not enough: taken over by two joins at once, or never (a
 * pid carried by another process since, as pid 1 in a container is). A lock file removed by a
 * refused join while others waited on it gave them SQLite's "disk I/O error".
 */
import { createHash, randomBytes } from "node:crypto"
import { existsSync } from "node:fs"
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import { joinKeyProblem, makeJoinKey } from "../../domain/workers/Secrets.js"
import { makePrivateDir, writePrivateFile } from "../PrivateFiles.js"
import type Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import { holdLock, isBusy, releaseLock, takeLock } from "../FileLock.js"
import { linksDir } from "./LinkStore.js"
import { makeDirectory } from "../MakeDirectory.js"

export interface PendingJoin {
  readonly key: string
  /** Whether the key was kept from an earlier try of the same join (its answer may be recorded). */
  readonly again: boolean
  /** Removes the key, lets the lock go, and removes the directories made to keep them when nothing else is in them. */
  readonly forget: () => Promise<void>
  /** Lets the lock go only (the key is kept for the next try): once the join ends, however. */
  readonly release: () => Promise<void>
}

/** Another `svc workers join` runs in this home now. */
export class JoinBusy extends Error {
  constructor() {
    super("another svc workers join runs in this SVC_HOME now: wait for it to end, and run this again if it did not join")
  }
}

/** How long a join waits for another one's lock before it says so. */
const LOCK_WAIT_MS = 2_000

/** The home's join lock, or JoinBusy after waiting for it. */
const lockJoins = async (file: string): Promise<Database.Database> => {
  const taken = await Effect.runPromise(Effect.either(holdLock(file, LOCK_WAIT_MS)))
  if (taken._tag === "Right") return taken.right
  throw taken.left.busy ? new JoinBusy() : new Error(taken.left.message)
}

/** Whether a join holds the home's join lock now (no lock file: none ever ran). */
const joinRunning = (file: string): boolean => {
  if (!existsSync(file)) return false
  try {
    releaseLock(takeLock(file))
    return false
  } catch (e) {
    return isBusy(e)
  }
}

/** The key file of a join to `url` with invite `inviteId` (hashed: a token's invite id is not trusted as a file name). */
export const pendingJoinFile = (home: string, url: string, inviteId: string) =>
  nodePath.join(linksDir(home), `${createHash("sha256").update(`${url}\n${inviteId}`).digest("hex").slice(0, 16)}.join-key`)

/** The lock file of the home's joins. */
export const JOIN_LOCK_FILE = "join.lock"
export const joinLockFile = (home: string) => nodePath.join(home, JOIN_LOCK_FILE)

interface Stored {
  readonly url: string
  readonly inviteId: string
  readonly joinKey: string
  readonly at: string
}

const readStored = async (file: string, url: string, inviteId: string): Promise<string | undefined> => {
  const text = await fs.readFile(file, "utf8").catch(() => undefined)
  if (text === undefined) return undefined
  try {
    const stored = JSON.parse(text) as Partial<Stored>
    const key = stored.joinKey
    return stored.url === url && stored.inviteId === inviteId && typeof key === "string" && joinKeyProblem(key) === undefined ? key : undefined
  } catch {
    return undefined
  }
}

/**
 * The join key for this join: the one an earlier try kept, else a new one, written (0600, in the
 * private links directory) before the join is sent, with the home's join lock held (JoinBusy
 * when another join runs). Fails as writing it fails.
 */
export const pendingJoin = async (home: string, url: string, inviteId: string): Promise<PendingJoin> => {
  const dir = linksDir(home)
  const file = pendingJoinFile(home, url, inviteId)
  await makeDirectory(home, 0o700)
  let lock: Database.Database | undefined = await lockJoins(joinLockFile(home))
  const release = async () => {
    if (lock !== undefined) releaseLock(lock)
    lock = undefined
  }
  // Made with the lock held, and removed before it is let go: a join waiting for it finds links/
  // as this one left it.
  let made: string | undefined
  // links/ when this join made it and it holds nothing (a join refused, or one that could not
  // keep its key, leaves links/ as it was; a home it made keeps join.lock).
  const unmake = async () => {
    if (made !== undefined) await fs.rmdir(dir).catch(() => undefined)
  }
  const forget = async () => {
    await fs.rm(file, { force: true })
    await unmake()
    await release()
  }
  try {
    made = await makeDirectory(dir, 0o700)
    await makePrivateDir(dir)
    const kept = await readStored(file, url, inviteId)
    if (kept !== undefined) return { key: kept, again: true, forget, release }
    const key = makeJoinKey(randomBytes(30))
    const stored: Stored = { url, inviteId, joinKey: key, at: new Date().toISOString() }
    await writePrivateFile(file, JSON.stringify(stored, null, 2) + "\n")
    return { key, again: false, forget, release }
  } catch (e) {
    await unmake()
    await release()
    throw e
  }
}

/** A join whose answer has not been kept yet, as `svc workers status` shows it (never its key). */
export interface PendingJoinView {
  readonly owner: string
  readonly invite: string
  /** When its key was made: the first try. */
  readonly since: string
  /** Whether a join runs in this home now. */
  readonly joiningNow: boolean
}

/** The joins this home keeps a key for, oldest first; unreadable key files are left out. */
export const pendingJoins = async (home: string): Promise<ReadonlyArray<PendingJoinView>> => {
  const dir = linksDir(home)
  const names = (await fs.readdir(dir).catch(() => [] as Array<string>)).filter((n) => n.endsWith(".join-key")).sort()
  const found: Array<PendingJoinView> = []
  const joiningNow = names.length > 0 && joinRunning(joinLockFile(home))
  for (const name of names) {
    try {
      const stored = JSON.parse(await fs.readFile(nodePath.join(dir, name), "utf8")) as Partial<Stored>
      if (typeof stored.url !== "string" || typeof stored.inviteId !== "string" || typeof stored.at !== "string") continue
      found.push({ owner: stored.url, invite: stored.inviteId, since: stored.at, joiningNow })
    } catch {
      // A key file being written (renamed into place) or damaged: not a join to show.
    }
  }
  return found.sort((a, b) => a.since.localeCompare(b.since))
}
