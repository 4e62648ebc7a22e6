/**
 * How much of each stream of an attempt's output is kept (docs/runs.md, "How much output is
 * kept"): the machine that runs the job keeps at most its limit of each stream (the owner's, when
 * the owner's is smaller: it is told with the work), then one line that says the rest was not
 * kept, and nothing more; the job runs on. The rule works on the bytes already in the file, so it
 * holds across the several children of an attempt (a preflight, the job, a validate command).
 * The owner, writing what a worker sends, keeps it whole up to its limit and room for the
 * worker's own line (`ownerPart`), so that a worker that does not keep to it (an older svc) cannot
 * fill the owner's disk.
 */
import { completeUtf8Length } from "./Utf8.js"

export const KiB = 1024
export const MiB = 1024 * KiB
export const GiB = 1024 * MiB

/** Each stream of an attempt, when nothing else is set. */
export const DEFAULT_OUTPUT_LIMIT = 16 * MiB
export const MIN_OUTPUT_LIMIT = 1 * KiB
export const MAX_OUTPUT_LIMIT = 1024 * GiB

/** A size as a person writes it: "16 MiB", "512 KiB", "1,000 bytes" (whole units only). */
export const formatSize = (bytes: number): string => {
  for (const [unit, size] of [["GiB", GiB], ["MiB", MiB], ["KiB", KiB]] as const) {
    if (bytes >= size && bytes % size === 0) return `${(bytes / size).toLocaleString("en-US")} ${unit}`
  }
  return `${bytes.toLocaleString("en-US")} bytes`
}

/**
 * Of `bytes` about to be appended to a stream whose file holds `size` bytes, how many to write
 * (a whole number of characters, never more than fit under `limit`), and whether the stream is
 * cut here (the rest not kept: the notice follows what is written). A file already over the limit
 * was cut before: nothing of it is written, and no second notice.
 *
 * The start of a character that the limit would cut is not written; the start of one that the
 * byte after it does not continue is no character's start (bytes that are not UTF-8, each a unit
 * of its own) and is written like any byte: so the cut falls where it would whatever the chunks
 * the bytes came in (a lone lead byte held back at a chunk's end is judged with the byte after it).
 */
export const keepOf = (bytes: Uint8Array, size: number, limit: number): { readonly keep: number; readonly cut: boolean } => {
  if (size > limit) return { keep: 0, cut: false }
  const room = limit - size
  if (bytes.length <= room) return { keep: bytes.length, cut: false }
  const whole = completeUtf8Length(bytes.subarray(0, room))
  return { keep: whole < room && !isContinuation(bytes[room]!) ? room : whole, cut: true }
}

const isContinuation = (byte: number): boolean => (byte & 0xc0) === 0x80

/** The line that ends a cut stream; on a line of its own (`atLineStart`: what is before it ends one). */
export const cutNotice = (limit: number, atLineStart: boolean): string =>
  `${atLineStart ? "" : "\n"}[svc: output past the first ${formatSize(limit)} of this stream was not kept (SVC_WORKFLOW_OUTPUT_LIMIT)]\n`

const EMPTY = new Uint8Array(0)
const NEWLINE = 0x0a

const concat = (a: Uint8Array, b: Uint8Array): Uint8Array => {
  const out = new Uint8Array(a.length + b.length)
  out.set(a)
  out.set(b, a.length)
  return out
}

/**
 * The rule over one stream's bytes as they come, appended to a file that holds `size` bytes
 * (`last`: its last byte). A job's pipe cuts its output anywhere, a character too: the start of
 * one cut at a chunk's end is held for the next chunk, so that the file is what the rule makes
 * of the whole output however it came. `end` gives what is still held (a character the job left
 * incomplete, written as it is).
 */
export class KeptOutput {
  private held: Uint8Array = EMPTY
  constructor(
    private size: number,
    private readonly limit: number,
    private last: number | undefined
  ) {}

  /** What of `chunk` to append now (perhaps nothing: held, or past the cut). */
  write(chunk: Uint8Array): Uint8Array {
    if (this.size > this.limit) return EMPTY
    const bytes = this.held.length === 0 ? chunk : concat(this.held, chunk)
    const whole = completeUtf8Length(bytes)
    this.held = bytes.slice(whole)
    return this.take(bytes.subarray(0, whole))
  }

  /** The stream ended: what is still held. */
  end(): Uint8Array {
    const rest = this.held
    this.held = EMPTY
    return this.size > this.limit || rest.length === 0 ? EMPTY : this.take(rest)
  }

  private take(bytes: Uint8Array): Uint8Array {
    const { keep, cut } = keepOf(bytes, this.size, this.limit)
    const kept = bytes.subarray(0, keep)
    if (keep > 0) this.last = bytes[keep - 1]
    this.size += keep
    if (!cut) return kept
    const notice = new TextEncoder().encode(cutNotice(this.limit, this.last === undefined || this.last === NEWLINE))
    this.size += notice.length
    return concat(kept, notice)
  }
}

/**
 * What the owner keeps of a worker's stream past its own limit: room for the line of a worker
 * that cut the stream at that limit (at most about 100 bytes), so that the line is kept whole.
 */
export const NOTICE_ROOM = 256

/** How every line that ends a cut stream begins. */
export const NOTICE_START = "[svc: output past the first "

/**
 * Where the owner is in a worker's stream, as to its limit: `open` (below it), `worker-line` (a
 * worker's own line began in a piece, its end is to come), `cut` (the stream ends with a line,
 * the worker's or its own: nothing more is written).
 */
export type OwnerCut = "open" | "worker-line" | "cut"

/**
 * The index in `text` (characters) at which the worker's copy reaches `offset`, `text` being the
 * worker's bytes from `start`, `span` of them, read as UTF-8. A character counts its UTF-8
 * bytes, but a U+FFFD counts one byte when the text is longer than its bytes (an invalid byte the
 * reading replaced), which is exact for single invalid bytes; never inside a character.
 */
const indexAt = (text: string, start: number, span: number, offset: number): number => {
  if (offset <= start) return 0
  const replaced = new TextEncoder().encode(text).length > span
  let at = start
  let i = 0
  for (const ch of text) {
    const code = ch.codePointAt(0)!
    const bytes = code === 0xfffd && replaced ? 1 : code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4
    if (at + bytes > offset) return i
    at += bytes
    i += ch.length
  }
  return i
}

/**
 * Of a worker's new text, lying at bytes `[start, to)` of the worker's copy of the stream (a
 * piece's `at`, revision 4), what the owner writes under its `limit`, given where it is (`was`):
 * all of it below the limit; a worker's own line that begins at or before the limit (at a line's
 * start) and ends within the room past it, whole, even across pieces; anything else past the
 * limit nothing, and `cut`: the stream is cut at the limit (between characters, counted in the
 * worker's bytes), the owner's line follows. Counted in the worker's bytes, output that is not
 * UTF-8 is kept as the worker kept it.
 */
export const ownerPart = (text: string, start: number, to: number, limit: number, was: OwnerCut = "open"): { readonly write: string; readonly cut: boolean; readonly now: OwnerCut } => {
  if (was === "cut") return { write: "", cut: false, now: "cut" }
  const ceiling = limit + NOTICE_ROOM
  if (was === "worker-line") {
    // The rest of the worker's line: up to its end, within the room; a line longer is no line of svc's.
    if (to > ceiling) return { write: "", cut: true, now: "cut" }
    const end = text.indexOf("\n")
    return end < 0 ? { write: text, cut: false, now: "worker-line" } : { write: text.slice(0, end + 1), cut: false, now: "cut" }
  }
  if (to <= limit) return { write: text, cut: false, now: "open" }
  const k = indexAt(text, start, to - start, limit)
  // A worker's line: the line the limit falls in, or the one right after it (its leading line
  // break sits at the limit); whole, or its start (the rest comes in the next piece).
  const lineStart = k === 0 ? 0 : text.lastIndexOf("\n", k - 1) + 1
  for (const at of text[k] === "\n" ? [lineStart, k + 1] : [lineStart]) {
    const rest = text.slice(at)
    if (to <= ceiling && rest !== "" && (rest.startsWith(NOTICE_START) || NOTICE_START.startsWith(rest))) {
      const end = text.indexOf("\n", at)
      return end < 0 ? { write: text, cut: false, now: "worker-line" } : { write: text.slice(0, end + 1), cut: false, now: "cut" }
    }
  }
  return { write: text.slice(0, k), cut: true, now: "cut" }
}
