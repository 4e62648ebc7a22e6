/**
 * The join key of a join whose answer has not arrived yet: `$SVC_HOME/links/<key>.join-key`,
 * mode 0600, one per owner and invite. `svc workers join` makes it (or finds it) before it
 * sends the join and removes it once the answer is kept or the owner refused, so a join whose
 * answer never came is answered again when it is run again with the same token
 * (docs/protocol.md, "A join whose answer never came"). Not a `.json` file: the runtime's link
 * watcher reads only those.
 *
 * One join of a token at a time in a home: `<key>.joining` names the process joining (its pid),
 * made exclusively and removed when it ends. Two at once shared the key: the one answered again
 * wrote its link, then the other's answer came and wrote its own credential over it, which the
 * answer again had taken away (the token spent, the link dead). A marker whose process is gone
 * (killed) is taken over.
 */
import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import { joinKeyProblem, makeJoinKey } from "../../domain/workers/Secrets.js"
import { makePrivateDir, writePrivateFile } from "../PrivateFiles.js"
import { linksDir } from "./LinkStore.js"
import { processAlive as alive } from "../ProcessAlive.js"

export interface PendingJoin {
  readonly key: string
  /** Whether the key was kept from an earlier try of the same join (its answer may be recorded). */
  readonly again: boolean
  /** Removes the key and the marker, and the directories made to keep them when nothing else is in them. */
  readonly forget: () => Promise<void>
  /** Removes the marker only (the key is kept for the next try): once the join ends, however. */
  readonly release: () => Promise<void>
}

/** Another `svc workers join` of the same token runs in this home now (`pid`: which, when its marker says yet). */
export class JoinBusy extends Error {
  constructor(readonly pid: number | undefined) {
    super(`another svc workers join of this token runs in this SVC_HOME now${pid === undefined ? "" : ` (pid ${pid})`}: wait for it to end, and run this again if it did not join`)
  }
}

/** Makes the marker, or fails with JoinBusy while a live process holds it; a dead one's is taken over once. */
const mark = async (marker: string): Promise<void> => {
  for (let tries = 0; tries < 2; tries++) {
    try {
      await fs.writeFile(marker, `${process.pid}\n`, { flag: "wx", mode: 0o600 })
      return
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
    }
    const pid = Number.parseInt(await fs.readFile(marker, "utf8").catch(() => ""), 10)
    // A marker without its pid yet was made a moment ago: a live join.
    if (!(pid > 0) || alive(pid) || tries > 0) throw new JoinBusy(pid > 0 ? pid : undefined)
    await fs.rm(marker, { force: true })
  }
}

/** The key file of a join to `url` with invite `inviteId` (hashed: a token's invite id is not trusted as a file name). */
export const pendingJoinFile = (home: string, url: string, inviteId: string) =>
  nodePath.join(linksDir(home), `${createHash("sha256").update(`${url}\n${inviteId}`).digest("hex").slice(0, 16)}.join-key`)

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
 * private links directory) before the join is sent. Fails as writing it fails.
 */
export const pendingJoin = async (home: string, url: string, inviteId: string): Promise<PendingJoin> => {
  const dir = linksDir(home)
  const file = pendingJoinFile(home, url, inviteId)
  const marker = file.replace(/\.join-key$/, ".joining")
  const made = await fs.mkdir(dir, { recursive: true, mode: 0o700 })
  // The directories this join made, deepest first, while they hold nothing (a join refused, or
  // one that could not keep its key, leaves the home as it was).
  const unmake = async () => {
    if (made === undefined) return
    for (let d = dir; d.length >= made.length; d = nodePath.dirname(d)) {
      if (!(await fs.rmdir(d).then(() => true, () => false))) return
    }
  }
  let marked = false
  const release = async () => {
    if (marked) await fs.rm(marker, { force: true })
    marked = false
  }
  const forget = async () => {
    await fs.rm(file, { force: true })
    await release()
    await unmake()
  }
  try {
    await makePrivateDir(dir)
    await mark(marker)
    marked = true
    const kept = await readStored(file, url, inviteId)
    if (kept !== undefined) return { key: kept, again: true, forget, release }
    const key = makeJoinKey(randomBytes(30))
    const stored: Stored = { url, inviteId, joinKey: key, at: new Date().toISOString() }
    await writePrivateFile(file, JSON.stringify(stored, null, 2) + "\n")
    return { key, again: false, forget, release }
  } catch (e) {
    await release()
    await unmake()
    throw e
  }
}

/** A join whose answer has not been kept yet, as `svc workers status` shows it (never its key). */
export interface PendingJoinView {
  readonly owner: string
  readonly invite: string
  /** When its key was made: the first try. */
  readonly since: string
  /** The process of a join of it running now, if one is. */
  readonly joiningNow: number | null
}

/** The joins this home keeps a key for, oldest first; unreadable key files are left out. */
export const pendingJoins = async (home: string): Promise<ReadonlyArray<PendingJoinView>> => {
  const dir = linksDir(home)
  const names = (await fs.readdir(dir).catch(() => [] as Array<string>)).filter((n) => n.endsWith(".join-key")).sort()
  const found: Array<PendingJoinView> = []
  for (const name of names) {
    try {
      const stored = JSON.parse(await fs.readFile(nodePath.join(dir, name), "utf8")) as Partial<Stored>
      if (typeof stored.url !== "string" || typeof stored.inviteId !== "string" || typeof stored.at !== "string") continue
      const pid = Number.parseInt(await fs.readFile(nodePath.join(dir, name.replace(/\.join-key$/, ".joining")), "utf8").catch(() => ""), 10)
      found.push({ owner: stored.url, invite: stored.inviteId, since: stored.at, joiningNow: pid > 0 && alive(pid) ? pid : null })
    } catch {
      // A key file being written (renamed into place) or damaged: not a join to show.
    }
  }
  return found.sort((a, b) => a.since.localeCompare(b.since))
}
