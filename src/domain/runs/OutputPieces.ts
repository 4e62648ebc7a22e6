/**
 * What of a piece of output a worker sends is new to the owner. A worker sends the output it has
 * not had answered, so a piece whose answer was lost comes again, perhaps longer or shorter (the
 * next call's room differs), always from where the last answered one ended: the owner wrote it
 * twice. Since revision 4 a piece says where it lies in the worker's copy (bytes, `at`), and the
 * text of a stretch read again from the same byte starts with the text read before (the worker
 * cuts between whole characters), so the owner can tell what it has: everything before `upTo`.
 * Byte offsets in the worker's copy are not characters in the owner's text (an invalid byte is
 * one U+FFFD), so the mark keeps, for the worker offsets a piece started or was found to end at,
 * where that falls in the text of the last piece written (`anchors`).
 */

export interface PieceMark {
  /** The worker offset after the last piece written. */
  readonly upTo: number
  /** The characters of the last piece written (its text covers the worker's bytes up to `upTo`). */
  readonly length: number
  /** Worker offsets within the last piece written, with the character each falls on in its text. */
  readonly anchors: ReadonlyMap<number, number>
}

const fresh = (from: number, to: number, text: string): PieceMark => ({ upTo: to, length: text.length, anchors: new Map([[from, 0]]) })

/**
 * The part of `text` (the worker's bytes `[from, to)`) to write, and the mark after it. Without a
 * mark (the first piece, or an owner restarted since), or from where the last one ended, all of it;
 * all of it written already, nothing; overlapping the last one from an offset the mark knows, the
 * rest. An overlap from an offset it does not know (no svc worker sends one) is written whole, as
 * before revision 4.
 */
export const newPart = (mark: PieceMark | undefined, at: readonly [number, number], text: string): { readonly write: string; readonly mark: PieceMark } => {
  const [from, to] = at
  if (mark === undefined || from >= mark.upTo) return { write: text, mark: fresh(from, to, text) }
  const start = mark.anchors.get(from)
  if (to <= mark.upTo) {
    // Sent again, no longer than before: the next piece starts where this one ends, inside the last.
    if (start === undefined) return { write: "", mark }
    const anchors = new Map(mark.anchors)
    anchors.set(to, start + text.length)
    return { write: "", mark: { ...mark, anchors } }
  }
  if (start === undefined) return { write: text, mark: fresh(from, to, text) }
  return { write: text.slice(mark.length - start), mark: fresh(from, to, text) }
}

/**
 * What is wrong with a piece lying at `at` (`[from, to)` of the worker's copy) whose text is
 * `bytes` long (UTF-8), or undefined. The text is the worker's bytes read as UTF-8: as long as
 * they are when they are UTF-8, and each that is not becomes a U+FFFD of 3 bytes, so it is at
 * least as long and at most three times. A piece outside that (`at: [0, 0]` with text, say) would
 * have its text written whole, past the owner's output limit, counted in the worker's bytes.
 */
export const pieceProblem = (at: readonly [number, number], bytes: number): string | undefined => {
  const [from, to] = at
  if (to < from) return `at [${from}, ${to}] ends before it starts`
  const span = to - from
  if (bytes < span || bytes > 3 * span) {
    return `its text is ${bytes} bytes (UTF-8) for the ${span} bytes at [${from}, ${to}] of the worker's copy: it must be at least as long and at most three times (each byte that is not UTF-8 arrives as a U+FFFD of 3)`
  }
  return undefined
}
