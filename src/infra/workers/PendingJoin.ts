/**
 * The join key of a join whose answer has not arrived yet: `$SVC_HOME/links/<key>.join-key`,
 * mode 0600, one per owner and invite. `svc workers join` makes it (or finds it) before it
 * sends the join and removes it once the answer is kept or the owner refused, so a join whose
 * answer never came is answered again when it is run again with the same token
 * (docs/protocol.md, "A join whose answer never came"). Not a `.json` file: the runtime's link
 * watcher reads only those.
 */
import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import { joinKeyProblem, makeJoinKey } from "../../domain/workers/Secrets.js"
import { makePrivateDir, writePrivateFile } from "../PrivateFiles.js"
import { linksDir } from "./LinkStore.js"

export interface PendingJoin {
  readonly key: string
  /** Whether the key was kept from an earlier try of the same join (its answer may be recorded). */
  readonly again: boolean
  /** Removes the key, and the directories made to keep it when nothing else is in them. */
  readonly forget: () => Promise<void>
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
  const made = await fs.mkdir(dir, { recursive: true, mode: 0o700 })
  // The directories this join made, deepest first, while they hold nothing (a join refused, or
  // one that could not keep its key, leaves the home as it was).
  const unmake = async () => {
    if (made === undefined) return
    for (let d = dir; d.length >= made.length; d = nodePath.dirname(d)) {
      if (!(await fs.rmdir(d).then(() => true, () => false))) return
    }
  }
  const forget = async () => {
    await fs.rm(file, { force: true })
    await unmake()
  }
  try {
    await makePrivateDir(dir)
    const kept = await readStored(file, url, inviteId)
    if (kept !== undefined) return { key: kept, again: true, forget }
    const key = makeJoinKey(randomBytes(30))
    const stored: Stored = { url, inviteId, joinKey: key, at: new Date().toISOString() }
    await writePrivateFile(file, JSON.stringify(stored, null, 2) + "\n")
    return { key, again: false, forget }
  } catch (e) {
    await unmake()
    throw e
  }
}
