/** `BagDirectory` on the local file system (node:fs): listing, reading and hashing a bag. */
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { BagDirectory, BagDirectoryError, type BagFile, type BagSnapshot } from "../../app/bags/BagDirectory.js"
import { canonicalListing, formatDigest } from "../../domain/bags/Digest.js"

/** Bags are small source trees; these bounds keep a mistaken `svc bag check ~` from walking a disk. */
export const MAX_FILES = 20_000
export const MAX_BYTES = 256 * 1024 * 1024
const SKIPPED_DIRS = new Set([".git"])

const ioError = (dir: string) => (e: unknown) => {
  const code = (e as NodeJS.ErrnoException)?.code
  if (code === "ENOENT") return new BagDirectoryError({ reason: "NotFound", message: `${dir} does not exist` })
  if (code === "ENOTDIR") return new BagDirectoryError({ reason: "NotADirectory", message: `${dir} is not a directory` })
  return new BagDirectoryError({ reason: "Unreadable", message: `${dir} cannot be read (${code ?? String(e)})` })
}

const list = async (root: string) => {
  const files: Array<BagFile> = []
  const dirs = new Set<string>([""])
  /** Symbolic links, to files or directories (a link to a directory is not followed). */
  const links = new Set<string>()
  let bytes = 0
  const walk = async (rel: string): Promise<void> => {
    const entries = await fs.readdir(nodePath.join(root, rel), { withFileTypes: true })
    for (const entry of entries) {
      const path = rel === "" ? entry.name : `${rel}/${entry.name}`
      if (entry.isDirectory()) {
        if (SKIPPED_DIRS.has(entry.name)) continue
        dirs.add(path)
        await walk(path)
      } else if (entry.isFile() || entry.isSymbolicLink()) {
        if (entry.isSymbolicLink()) links.add(path)
        const stat = await fs.stat(nodePath.join(root, path)).catch(() => undefined)
        // A link to a directory is not walked (it could lead anywhere): it is listed as a link, which install refuses.
        if (stat?.isDirectory()) continue
        bytes += stat?.size ?? 0
        files.push({ path, executable: ((stat?.mode ?? 0) & 0o111) !== 0, size: stat?.size ?? 0 })
      }
      if (files.length > MAX_FILES || bytes > MAX_BYTES) {
        throw new BagDirectoryError({
          reason: "TooLarge",
          message: `${root} holds more than ${MAX_FILES} files or ${MAX_BYTES / 1024 / 1024} MiB; a bag is a small source tree`
        })
      }
    }
  }
  await walk("")
  return { files, dirs, links }
}

const hashFile = async (path: string): Promise<string> => createHash("sha256").update(await fs.readFile(path)).digest("hex")

export const make = BagDirectory.of({
  read: (dir) =>
    Effect.tryPromise({
      try: async (): Promise<BagSnapshot> => {
        const abs = nodePath.resolve(dir)
        const stat = await fs.stat(abs)
        if (!stat.isDirectory()) throw new BagDirectoryError({ reason: "NotADirectory", message: `${dir} is not a directory` })
        const manifest = nodePath.join(abs, "bag.yaml")
        // A regular file only: reading a FIFO (or a device) waited for ever, and a directory said EISDIR of the bag.
        const kind = await fs.stat(manifest).catch((e: NodeJS.ErrnoException) => {
          if (e.code === "ENOENT") throw new BagDirectoryError({ reason: "NoManifest", message: `${dir} has no bag.yaml` })
          throw e
        })
        if (!kind.isFile()) throw new BagDirectoryError({ reason: "NoManifest", message: `${nodePath.join(dir, "bag.yaml")} is not a regular file (${kind.isDirectory() ? "a directory" : kind.isFIFO() ? "a FIFO" : "a device or socket"})` })
        const manifestText = await fs.readFile(manifest, "utf8").catch((e: NodeJS.ErrnoException) => {
          if (e.code === "ENOENT") throw new BagDirectoryError({ reason: "NoManifest", message: `${dir} has no bag.yaml` })
          throw e
        })
        const { files, dirs, links } = await list(abs)
        return { dir: abs, manifestText, files, listing: { files: new Set(files.map((f) => f.path)), dirs, symlinks: links } }
      },
      catch: (e) => (e instanceof BagDirectoryError ? e : ioError(dir)(e))
    }),
  digest: (snapshot) =>
    Effect.tryPromise({
      try: async () => {
        // The listing names every link, to a file or a directory (read, above).
        const link = [...(snapshot.listing.symlinks ?? [])].sort()[0]
        if (link !== undefined) {
          throw new BagDirectoryError({
            reason: "Symlink",
            message: `${link} is a symbolic link; a bag must be self-contained, so copy what it points to in instead`
          })
        }
        const entries = []
        for (const f of snapshot.files) {
          entries.push({ path: f.path, executable: f.executable, sha256: await hashFile(nodePath.join(snapshot.dir, f.path)) })
        }
        return formatDigest(createHash("sha256").update(canonicalListing(entries)).digest("hex"))
      },
      catch: (e) => (e instanceof BagDirectoryError ? e : ioError(snapshot.dir)(e))
    }),
  readText: (dir, path) =>
    Effect.tryPromise({ try: () => fs.readFile(nodePath.join(dir, path), "utf8"), catch: ioError(`${dir}/${path}`) })
})

export const layer = Layer.succeed(BagDirectory, make)
