/** How much of a stream of output a machine keeps: the rule, on bytes, whatever their chunks. */
import * as Either from "effect/Either"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { parseOutputLimit } from "../../../src/app/runs/OutputLimit.js"
import { cutNotice, DEFAULT_OUTPUT_LIMIT, formatSize, keepOf, KeptOutput, ownerPart } from "../../../src/domain/runs/OutputLimit.js"
import { completeUtf8Length } from "../../../src/domain/runs/Utf8.js"

/** What a file holds after `chunks` are appended to it as they come, under the rule. */
const appendAll = (chunks: ReadonlyArray<Uint8Array>, limit: number, initial: Uint8Array = new Uint8Array()): Buffer => {
  const kept = new KeptOutput(initial.length, limit, initial.at(-1))
  return Buffer.concat([initial, ...chunks.map((chunk) => kept.write(chunk)), kept.end()])
}

describe("keepOf", () => {
  it("keeps what fits, cuts at the limit, and after the cut keeps nothing", () => {
    expect(keepOf(Buffer.from("abc"), 0, 10)).toEqual({ keep: 3, cut: false })
    expect(keepOf(Buffer.from("abcdefghijkl"), 0, 10)).toEqual({ keep: 10, cut: true })
    expect(keepOf(Buffer.from("abc"), 8, 10)).toEqual({ keep: 2, cut: true })
    // Exactly full: nothing was lost yet; the next byte cuts it.
    expect(keepOf(Buffer.from("ab"), 8, 10)).toEqual({ keep: 2, cut: false })
    expect(keepOf(Buffer.from("a"), 10, 10)).toEqual({ keep: 0, cut: true })
    expect(keepOf(Buffer.alloc(0), 10, 10)).toEqual({ keep: 0, cut: false })
    // Over the limit: the notice is there already.
    expect(keepOf(Buffer.from("a"), 11, 10)).toEqual({ keep: 0, cut: false })
  })

  it("never splits a character at the cut, though the pipe split it", () => {
    const euro = Buffer.from("a€b")
    expect(appendAll([euro.subarray(0, 2), euro.subarray(2)], 3).toString()).toBe(`a\n${cutNotice(3, true)}`)
    // A character the job left incomplete at its end is written as it is.
    expect(appendAll([euro.subarray(0, 3)], 10)).toEqual(euro.subarray(0, 3))
    // "€" is 3 bytes: 2 of room keep none of it.
    expect(keepOf(Buffer.from("a€"), 7, 10)).toEqual({ keep: 1, cut: true })
    expect(keepOf(Buffer.from("😀"), 8, 10)).toEqual({ keep: 0, cut: true })
    // A lead byte that the next byte does not continue is no character's start: kept as the byte
    // it is, however the bytes came (a property run found it kept when held back at a chunk's end,
    // and left out when it came with the byte after it).
    const lone = Uint8Array.from([0x61, 0xc0, 0xc0])
    expect(keepOf(lone, 0, 2)).toEqual({ keep: 2, cut: true })
    expect(keepOf(Uint8Array.from([0x61, 0xc0, 0x41]), 0, 2)).toEqual({ keep: 2, cut: true })
    expect(keepOf(Uint8Array.from([0x61, 0xc3, 0xa9]), 0, 2)).toEqual({ keep: 1, cut: true })
    expect(appendAll([lone], 2)).toEqual(appendAll([lone.subarray(0, 1), lone.subarray(1)], 2))
  })

  it("gives the same file however the output was chunked, and never keeps more than the limit and one notice", () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 300 }), fc.string({ unit: "binary", maxLength: 100 }).map((t) => new Uint8Array(Buffer.from(t)))), fc.array(fc.nat({ max: 300 }), { maxLength: 8 }), fc.integer({ min: 1, max: 200 }), fc.nat({ max: 3 }), (bytes, cuts, anyLimit, nearCut) => {
        const at = [...new Set(cuts.map((c) => Math.min(c, bytes.length)))].sort((a, b) => a - b)
        // Often just past where the pipe cut: a character split across chunks meets the limit.
        const limit = nearCut > 0 && at.length > 0 ? Math.max(1, at[0]! + nearCut - 1) : anyLimit
        const chunks = [0, ...at].map((from, i) => bytes.subarray(from, [...at, bytes.length][i]))
        const whole = appendAll([bytes], limit)
        expect(appendAll(chunks, limit)).toEqual(whole)
        if (bytes.length <= limit) {
          expect(whole).toEqual(Buffer.from(bytes))
          expect(appendAll(chunks, limit).toString("utf8")).toBe(Buffer.from(bytes).toString("utf8"))
        } else {
          // The output's start, cut between characters at most `limit` bytes in, then the notice: the
          // start of a character the limit cuts is left out, unless the byte after it does not continue it.
          const complete = completeUtf8Length(bytes.subarray(0, limit))
          const k = complete < limit && (bytes[limit]! & 0xc0) !== 0x80 ? limit : complete
          const notice = cutNotice(limit, k === 0 || bytes[k - 1] === 0x0a)
          expect(whole).toEqual(Buffer.concat([bytes.subarray(0, k), Buffer.from(notice)]))
          expect(whole.length).toBeLessThanOrEqual(limit + Buffer.byteLength(notice))
        }
      })
    )
  })

  it("keeps a file cut before as it is: one notice, whatever comes after", () => {
    const first = appendAll([Buffer.from("x".repeat(30))], 10)
    expect(appendAll([Buffer.from("more"), Buffer.from("\nand more")], 10, first)).toEqual(first)
  })

  it("puts the notice on a line of its own", () => {
    expect(appendAll([Buffer.from("line one\nline two is long")], 12).toString()).toBe(`line one\nlin\n${cutNotice(12, true)}`)
    expect(appendAll([Buffer.from("line one\n"), Buffer.from("more")], 9).toString()).toBe(`line one\n${cutNotice(9, true)}`)
    expect(cutNotice(16 * 1024 * 1024, true)).toBe("[svc: output past the first 16 MiB of this stream was not kept (SVC_WORKFLOW_OUTPUT_LIMIT)]\n")
  })
})

describe("ownerPart: what the owner keeps of a worker's stream", () => {
  const limit = 1024
  const line = cutNotice(limit, true)

  it("keeps all of it below its limit", () => {
    expect(ownerPart("abc", 0, 3, limit)).toEqual({ write: "abc", cut: false, now: "open" })
    expect(ownerPart("x".repeat(24), 1000, 1024, limit)).toEqual({ write: "x".repeat(24), cut: false, now: "open" })
  })

  it("keeps a worker's own line whole past the limit: right at it, begun before it, or across two pieces", () => {
    // Its kept bytes end at the limit; its line, with its leading line break, right after.
    expect(ownerPart(`ab\n${line}`, 1021, 1024 + 1 + line.length, limit)).toEqual({ write: `ab\n${line}`, cut: false, now: "cut" })
    expect(ownerPart(`ab\n${line}`, 1022, 1025 + line.length, limit)).toEqual({ write: `ab\n${line}`, cut: false, now: "cut" })
    // Its line begins before the limit (a character the cut left out, or a smaller limit of its own).
    expect(ownerPart(`ab\n${line}`, 1020, 1023 + line.length, limit)).toEqual({ write: `ab\n${line}`, cut: false, now: "cut" })
    const first = ownerPart(`ab\n${line.slice(0, 10)}`, 1021, 1034, limit)
    expect(first).toEqual({ write: `ab\n${line.slice(0, 10)}`, cut: false, now: "worker-line" })
    expect(ownerPart(line.slice(10), 1034, 1024 + line.length, limit, first.now)).toEqual({ write: line.slice(10), cut: false, now: "cut" })
  })

  it("cuts anything else at the limit, between characters, and says its line follows; after the cut, nothing", () => {
    expect(ownerPart("abcdef", 1020, 1026, limit)).toEqual({ write: "abcd", cut: true, now: "cut" })
    expect(ownerPart("a€b", 1022, 1027, limit)).toEqual({ write: "a", cut: true, now: "cut" })
    // Entirely past it (an owner restarted with a lower limit, its marks gone): its line only.
    expect(ownerPart("late", 5000, 5004, limit)).toEqual({ write: "", cut: true, now: "cut" })
    expect(ownerPart("more", 5004, 5008, limit, "cut")).toEqual({ write: "", cut: false, now: "cut" })
    // A worker's line too long for the room past the limit is no line of svc's.
    expect(ownerPart("x".repeat(300), 1100, 1400, limit, "worker-line")).toEqual({ write: "", cut: true, now: "cut" })
  })

  it("counts the worker's bytes, not the text's: each invalid byte, a U+FFFD of 3 bytes here, counts one", () => {
    const text = "\uFFFD".repeat(1000) + "a".repeat(1000)
    expect(ownerPart(text, 0, 2000, limit)).toEqual({ write: "\uFFFD".repeat(1000) + "a".repeat(24), cut: true, now: "cut" })
    expect(ownerPart("\uFFFD".repeat(1024), 0, 1024, limit)).toEqual({ write: "\uFFFD".repeat(1024), cut: false, now: "open" })
  })
})

describe("formatSize", () => {
  it("says whole units, else bytes", () => {
    expect(formatSize(16 * 1024 * 1024)).toBe("16 MiB")
    expect(formatSize(1536 * 1024)).toBe("1,536 KiB")
    expect(formatSize(2 * 1024 ** 3)).toBe("2 GiB")
    expect(formatSize(1000)).toBe("1,000 bytes")
  })
})

describe("SVC_WORKFLOW_OUTPUT_LIMIT", () => {
  it("takes bytes or whole KiB, MiB, GiB; unset or empty is the default", () => {
    expect(parseOutputLimit(undefined)).toEqual(Either.right(DEFAULT_OUTPUT_LIMIT))
    expect(parseOutputLimit(" ")).toEqual(Either.right(DEFAULT_OUTPUT_LIMIT))
    expect(parseOutputLimit("65536")).toEqual(Either.right(65536))
    expect(parseOutputLimit("64MiB")).toEqual(Either.right(64 * 1024 * 1024))
    expect(parseOutputLimit("512 kib")).toEqual(Either.right(512 * 1024))
    expect(parseOutputLimit("1GiB")).toEqual(Either.right(1024 ** 3))
  })

  it("refuses what is not a size it knows, naming the variable, the value and what it takes", () => {
    for (const [raw, more] of [
      ["16MB", "; MB is not taken (KiB, MiB and GiB are 1,024 apart)"],
      ["lots", ""],
      ["1.5MiB", ""],
      ["-1", ""],
      ["100", ""],
      ["2048GiB", ""]
    ] as const) {
      expect(parseOutputLimit(raw)).toEqual(
        Either.left(`SVC_WORKFLOW_OUTPUT_LIMIT must be a size from 1 KiB to 1,024 GiB, in bytes or in whole KiB, MiB or GiB (as 64MiB), not ${JSON.stringify(raw)}${more}`)
      )
    }
  })
})

describe("completeUtf8Length", () => {
  it("cuts an incomplete character at the end, and nothing else", () => {
    expect(completeUtf8Length(Buffer.from("abc"))).toBe(3)
    expect(completeUtf8Length(Buffer.from("a€"))).toBe(4)
    expect(completeUtf8Length(Buffer.from("a€").subarray(0, 3))).toBe(1)
    expect(completeUtf8Length(Buffer.from("😀").subarray(0, 3))).toBe(0)
    expect(completeUtf8Length(Buffer.from([0x41, 0xc3]))).toBe(1)
    // Invalid bytes are not characters in progress: kept, each one byte.
    expect(completeUtf8Length(Buffer.from([0x41, 0xff]))).toBe(2)
    expect(completeUtf8Length(Buffer.from([0x80, 0x80, 0x80, 0x80]))).toBe(4)
    expect(completeUtf8Length(Buffer.from([0x41, 0xe2, 0x82, 0xac, 0x80]))).toBe(5)
    expect(completeUtf8Length(Buffer.alloc(0))).toBe(0)
  })
})
