/**
 * `JSON.stringify(value)` in pieces: the text of a long array is cut between its elements, so
 * that a caller can let other work run between pieces (a checkpoint's snapshot of thousands of
 * runs, app/journal/Replay.ts, would otherwise hold the owner's thread for the whole text).
 *
 * Pure. Joined, the pieces are exactly `JSON.stringify(value)` for every value it turns into
 * text (a property test checks it): plain objects are walked key by key as it walks them
 * (skipping what it skips), an array of at most `slice` elements and any other value are
 * stringified whole, and a longer array `slice` elements at a time. (A `toJSON` method of a
 * value stringified whole is called with the key "", not its own: the state's values ignore it.)
 */

const isPlainObject = (value: object): boolean => {
  const proto = Object.getPrototypeOf(value)
  return (proto === Object.prototype || proto === null) && typeof (value as { toJSON?: unknown }).toJSON !== "function"
}

/** What JSON.stringify leaves out of an object. */
const omitted = (value: unknown): boolean => value === undefined || typeof value === "function" || typeof value === "symbol"

export function* jsonPieces(value: unknown, slice: number): Generator<string, void, undefined> {
  if (!Number.isInteger(slice) || slice < 1) throw new RangeError(`slice must be a positive integer, not ${slice}`)
  if (value === null || typeof value !== "object") {
    const text = JSON.stringify(value)
    if (text !== undefined) yield text
    return
  }
  if (Array.isArray(value)) {
    if (value.length <= slice) {
      yield JSON.stringify(value)
      return
    }
    yield "["
    for (let i = 0; i < value.length; i += slice) {
      const part = JSON.stringify(value.slice(i, i + slice))
      yield (i === 0 ? "" : ",") + part.slice(1, -1)
    }
    yield "]"
    return
  }
  if (!isPlainObject(value)) {
    const text = JSON.stringify(value)
    if (text !== undefined) yield text
    return
  }
  yield "{"
  let first = true
  for (const key of Object.keys(value)) {
    const field = (value as Record<string, unknown>)[key]
    if (omitted(field)) continue
    const name = (first ? "" : ",") + JSON.stringify(key) + ":"
    if (field !== null && typeof field === "object" && (Array.isArray(field) ? field.length > slice : isPlainObject(field))) {
      yield name
      yield* jsonPieces(field, slice)
    } else {
      // Whole; left out when it stringifies to nothing (a toJSON answering undefined).
      const text = JSON.stringify(field)
      if (text === undefined) continue
      yield name + text
    }
    first = false
  }
  yield "}"
}
