/**
 * Where the journal's mark is kept (domain/journal/JournalMark.ts): `$SVC_HOME/journal.mark`,
 * beside `svc.sqlite` and not in it, so that a copy of the journal put in its place does not
 * bring an older mark with it. Mode 0600 (it holds the first digits of credential hashes).
 */
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import * as Schema from "effect/Schema"
import type { JournalMark } from "../../domain/journal/JournalMark.js"
import { writePrivateFile } from "../PrivateFiles.js"

export const markPath = (home: string) => nodePath.join(home, "journal.mark")

const StoredMark = Schema.Struct({
  sequence: Schema.Int,
  anchor: Schema.NullOr(Schema.Struct({ stream: Schema.String, streamVersion: Schema.Int, type: Schema.String })),
  revoked: Schema.Array(Schema.String),
  credentials: Schema.Record({ key: Schema.String, value: Schema.String }),
  spent: Schema.Array(Schema.String),
  writtenAt: Schema.String
})
const decode = Schema.decodeUnknownEither(StoredMark)

export interface WrittenMark extends JournalMark {
  /** When it was written (ISO 8601). */
  readonly writtenAt: string
}

/** The mark kept in `home`; undefined when there is none, or it cannot be read (said by `unreadable`). */
export const readMark = async (home: string, unreadable: (why: string) => void): Promise<WrittenMark | undefined> => {
  let text: string
  try {
    text = await fs.readFile(markPath(home), "utf8")
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") unreadable((e as Error).message)
    return undefined
  }
  try {
    const decoded = decode(JSON.parse(text))
    if (decoded._tag === "Right") return decoded.right
  } catch {
    // Said below.
  }
  unreadable(`${markPath(home)} is not a journal mark`)
  return undefined
}

export const writeMark = (home: string, mark: JournalMark, at: Date): Promise<void> =>
  writePrivateFile(markPath(home), JSON.stringify({ ...mark, writtenAt: at.toISOString() }) + "\n")
