/**
 * What of a piece of output a worker sends is new to the owner (OutputPieces.ts): each case once,
 * then a property: however answers are lost and however the pieces are cut, what the owner
 * writes is the stream, once.
 */
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { newPart, type PieceMark, pieceProblem } from "../../../src/domain/runs/OutputPieces.js"

/** Pieces fed in order: what was written, and the mark after them. */
const feed = (pieces: ReadonlyArray<readonly [number, number, string]>) => {
  let mark: PieceMark | undefined
  let written = ""
  for (const [from, to, text] of pieces) {
    const part = newPart(mark, [from, to], text)
    written += part.write
    mark = part.mark
  }
  return written
}

describe("the new part of a piece of output", () => {
  it("is all of the first piece, and of each piece from where the last one ended", () => {
    expect(feed([[0, 5, "hello"], [5, 11, " world"]])).toBe("hello world")
  })

  it("is nothing of a piece sent again (its answer was lost), and the rest of a longer one", () => {
    expect(feed([[0, 5, "hello"], [0, 5, "hello"], [5, 6, "!"]])).toBe("hello!")
    expect(feed([[0, 5, "hello"], [0, 11, "hello world"], [11, 12, "!"]])).toBe("hello world!")
  })

  it("after a shorter piece sent again, is only what the next one adds past the last one written", () => {
    expect(feed([[0, 10, "0123456789"], [0, 4, "0123"], [4, 12, "456789AB"]])).toBe("0123456789AB")
  })

  it("counts in the worker's bytes and the owner's characters apart: multi-byte and invalid bytes", () => {
    // "aé€" is 6 bytes; an invalid byte (1) arrives as U+FFFD.
    expect(feed([[0, 6, "aé€"], [0, 9, "aé€xyz"]])).toBe("aé€xyz")
    expect(feed([[0, 6, "aé€"], [0, 3, "aé"], [3, 10, "€xyzw"]])).toBe("aé€xyzw")
    expect(feed([[0, 2, "a\ufffd"], [0, 4, "a\ufffdbc"]])).toBe("a\ufffdbc")
  })

  it("overlapping from an offset it cannot place, is written whole, as before pieces said where they lie", () => {
    expect(feed([[0, 5, "hello"], [2, 7, "llo w"]])).toBe("hellollo w")
  })
})

describe("a stream sent in pieces whose answers may be lost", () => {
  // A stream of characters of 1 to 4 bytes, and an invalid byte now and then (one U+FFFD).
  const chars = fc.array(fc.constantFrom("a", "b", "\n", "é", "€", "😀", "\ufffd"), { minLength: 0, maxLength: 60 })
  const byteLength = (c: string) => (c === "\ufffd" ? 1 : Buffer.byteLength(c))

  it("is written once, whole, in order", () => {
    fc.assert(
      fc.property(chars, fc.array(fc.tuple(fc.integer({ min: 0, max: 12 }), fc.boolean()), { minLength: 1, maxLength: 80 }), (stream, calls) => {
        const offsets = [0]
        for (const c of stream) offsets.push(offsets.at(-1)! + byteLength(c))
        let answered = 0 // characters the worker has had answered
        let mark: PieceMark | undefined
        let written = ""
        const send = (count: number, answerArrives: boolean) => {
          // From the last answered character, as many as the call has room for.
          const end = Math.min(stream.length, answered + count)
          const part = newPart(mark, [offsets[answered]!, offsets[end]!], stream.slice(answered, end).join(""))
          written += part.write
          mark = part.mark
          if (answerArrives) answered = end
        }
        for (const [count, answerArrives] of calls) send(count, answerArrives)
        // In the end every call is answered (the report is sent until it is).
        while (answered < stream.length) send(12, true)
        expect(written).toBe(stream.join(""))
      })
    )
  })
})

describe("pieceProblem: a piece's text against the bytes its at covers", () => {
  it("takes text as long as its bytes, up to three times as long (invalid bytes), and nothing else", () => {
    expect(pieceProblem([0, 4], 4)).toBeUndefined()
    expect(pieceProblem([10, 12], 6)).toBeUndefined()
    expect(pieceProblem([0, 0], 0)).toBeUndefined()
    expect(pieceProblem([0, 0], 60_000)).toMatch(/^its text is 60000 bytes \(UTF-8\) for the 0 bytes at \[0, 0\]/)
    expect(pieceProblem([0, 10], 9)).toMatch(/for the 10 bytes/)
    expect(pieceProblem([0, 10], 31)).toMatch(/for the 10 bytes/)
    expect(pieceProblem([9, 3], 0)).toBe("at [9, 3] ends before it starts")
  })
})
