/**
 * `BagStore` in `$SVC_HOME/bags`: one directory per installed bag, `<name>/bag/` holding the
 * copy and `<name>/install.json` the record (docs/bags.md). A replacement is staged beside it
 * and swapped in with renames, so a crash leaves the old or the new bag, never half of one.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { BagStore, BagStoreError, type InstalledBag } from "../../app/bags/BagStore.js"
import { SvcHome } from "../SvcHome.js"
import { makeDirectory } from "../MakeDirectory.js"
import { holdLock, releaseLock } from "../FileLock.js"

const Record = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  digest: Schema.String,
  installedAt: Schema.String,
  source: Schema.String,
  jobs: Schema.Array(Schema.Struct({ name: Schema.String, address: Schema.optionalWith(Schema.String, { exact: true }) })),
  constants: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  pinnedConstants: Schema.Array(Schema.Struct({ bag: Schema.String, name: Schema.String, value: Schema.Unknown }))
})
const decodeRecord = Schema.decodeUnknownEither(Schema.parseJson(Record))

/** An extension registers as `parent/name`; on disk the slash becomes `+`. */
const dirName = (name: string) => name.replace(/\//g, "+")

// The file system's words, with the path (`EROFS: read-only file system, mkdir '/h/bags'`), not its code alone.
const io = (what: string) => (e: unknown) =>
  new BagStoreError({ reason: "Io", message: `${what}: ${e instanceof Error ? e.message : String(e)}` })

/**
 * The installed copy is read-only (files r--/r-x, directories r-x): a job runs in its bag's
 * directory (the spec's default working directory), and one that wrote there would change
 * what the recorded digest stands for. (Root is not held back by modes; `svc bag doctor`
 * checks the digest again.) Directories are made writable again before the copy is removed.
 */
const readOnly = async (dir: string): Promise<void> => {
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    const path = nodePath.join(dir, e.name)
    if (e.isDirectory()) await readOnly(path)
    else if (e.isFile()) await fs.chmod(path, (await fs.stat(path)).mode & 0o555)
  }
  await fs.chmod(dir, 0o555)
}
const writable = async (dir: string): Promise<void> => {
  const stat = await fs.lstat(dir).catch(() => undefined)
  if (stat === undefined || !stat.isDirectory()) return
  await fs.chmod(dir, 0o700)
  for (const e of await fs.readdir(dir, { withFileTypes: true })) if (e.isDirectory()) await writable(nodePath.join(dir, e.name))
}
const removeTree = async (dir: string): Promise<void> => {
  await writable(dir)
  await fs.rm(dir, { recursive: true, force: true })
}

/**
 * Absent (undefined) only when the file is not there: any other failure to read it (too many
 * open files, an I/O error) is thrown, not taken for a bag not installed (a worker out of file
 * descriptors declined its work as "not installed here", which excluded it for good).
 */
const unlessAbsent = <A>(e: unknown, absent: A): A => {
  const code = (e as NodeJS.ErrnoException | undefined)?.code
  if (code === "ENOENT" || code === "ENOTDIR") return absent
  throw e
}

/**
 * The store's lock file (a lock the kernel keeps on the open file, gone with its process however
 * it ends: ../FileLock.ts), held by each install and removal; never removed, as join.lock is not.
 * A dot file: the listing skips names starting with a dot.
 */
export const LOCK_FILE = ".lock"
/** How long an install or removal waits for another one's (copying a large bag takes a while). */
const LOCK_WAIT_MS = 60_000

export const make = (home: string) => {
  const root = nodePath.join(home, "bags")
  const read = async (dir: string): Promise<InstalledBag | undefined> => {
    const text = await fs.readFile(nodePath.join(root, dir, "install.json"), "utf8").catch((e: unknown) => unlessAbsent(e, undefined))
    if (text === undefined) return undefined
    const record = decodeRecord(text)
    if (record._tag === "Left") throw new BagStoreError({ reason: "Corrupt", message: `${nodePath.join(root, dir, "install.json")} is not a valid install record` })
    return {
      ...record.right,
      jobs: record.right.jobs.map((j) => ({ name: j.name, address: j.address })),
      path: nodePath.join(root, dir, "bag")
    }
  }
  const wrap = <A>(what: string, f: () => Promise<A>) =>
    Effect.tryPromise({ try: f, catch: (e) => (e instanceof BagStoreError ? e : io(what)(e)) })

  return BagStore.of({
    exclusive: (effect) =>
      Effect.acquireUseRelease(
        Effect.flatMap(
          wrap("making the bag store", () => makeDirectory(root, 0o700)),
          () =>
            holdLock(nodePath.join(root, LOCK_FILE), LOCK_WAIT_MS).pipe(
              Effect.mapError((p) =>
                p.busy
                  ? new BagStoreError({ reason: "Io", message: `another svc bag install or remove has held this SVC_HOME's bag store for ${LOCK_WAIT_MS / 1000} s: wait for it to end, then run this again` })
                  : new BagStoreError({ reason: "Io", message: `the bag store's lock (${nodePath.join(root, LOCK_FILE)}) cannot be taken: ${p.message}` })
              )
            )
        ),
        () => effect,
        (lock) => Effect.sync(() => releaseLock(lock))
      ),
    list: wrap("reading the bag store", async () => {
      // A listing shows what it can read: a store or a bag it cannot read now (too many open files,
      // a directory another user made) is left out, not the whole listing refused (one unreadable
      // entry hid every bag from a worker's offer). Asked for by name (`get`), it is said.
      const entries = await fs.readdir(root, { withFileTypes: true }).catch(() => [])
      const bags: Array<InstalledBag> = []
      for (const e of entries) {
        if (!e.isDirectory() || e.name.startsWith(".")) continue
        const bag = await read(e.name).catch((failure: unknown) => {
          if (failure instanceof BagStoreError) throw failure
          return undefined
        })
        if (bag !== undefined) bags.push(bag)
      }
      return bags.sort((a, b) => a.name.localeCompare(b.name))
    }),
    get: (name) => wrap(`reading bag ${name}`, () => read(dirName(name))),
    put: (snapshot, record) =>
      wrap(`installing bag ${record.name}`, async () => {
        // $SVC_HOME too when it is new: owner-only, as svc serve makes it (it holds credentials).
        await makeDirectory(root, 0o700)
        const staging = nodePath.join(root, `.staging-${randomBytes(6).toString("hex")}`)
        try {
          for (const dir of [...snapshot.listing.dirs].sort()) await fs.mkdir(nodePath.join(staging, "bag", dir), { recursive: true })
          for (const f of snapshot.files) await fs.copyFile(nodePath.join(snapshot.dir, f.path), nodePath.join(staging, "bag", f.path))
          const json = { ...record, jobs: record.jobs.map((j) => (j.address === undefined ? { name: j.name } : j)) }
          await fs.writeFile(nodePath.join(staging, "install.json"), JSON.stringify(json, null, 2) + "\n")
          await readOnly(nodePath.join(staging, "bag"))
          const target = nodePath.join(root, dirName(record.name))
          const old = `${staging}-old`
          const hadOld = await fs.rename(target, old).then(() => true, () => false)
          await fs.rename(staging, target)
          if (hadOld) await removeTree(old)
          return { ...record, path: nodePath.join(target, "bag") }
        } finally {
          await removeTree(staging)
        }
      }),
    remove: (name) => wrap(`removing bag ${name}`, () => removeTree(nodePath.join(root, dirName(name))))
  })
}

export const layer = Layer.effect(BagStore, Effect.map(SvcHome, (home) => make(home.path)))
