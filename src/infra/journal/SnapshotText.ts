/**
 * How a snapshot's text is stored (docs/journal.md, "Start-up from a snapshot"): compressed with
 * zlib at level 1, off the owner's thread (libuv's pool), about a tenth of the canonical JSON
 * (0.95 MiB for 10.4 MiB with 9,000 runs kept), so the checkpoint's write and the WAL's copy of
 * it are a tenth too. A stored text that is not compressed (before the ninth session) is read
 * as it is.
 */
import { promisify } from "node:util"
import { deflate, inflateSync } from "node:zlib"

const deflating = promisify(deflate)

/** What to store for a snapshot's canonical JSON. */
export const storedSnapshot = (text: string): Promise<Buffer> => deflating(Buffer.from(text, "utf8"), { level: 1 })

/** The canonical JSON of a stored snapshot (throws when it cannot be read). */
export const snapshotText = (stored: unknown): string => {
  if (typeof stored === "string") return stored
  if (stored instanceof Uint8Array) return inflateSync(stored).toString("utf8")
  throw new Error(`a stored snapshot is neither text nor compressed bytes (${typeof stored})`)
}
