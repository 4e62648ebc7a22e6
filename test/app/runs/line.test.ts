/** The line of pending runs (src/app/runs/Line.ts): per kind, in submission order, kept between rounds. */
import * as HashMap from "effect/HashMap"
import { describe, expect, it } from "vitest"
import { Line, REMAKE_MS } from "../../../src/app/runs/Line.js"

/** Pending runs by id, their sequence the order given. */
const pendingOf = (...ids: ReadonlyArray<string>) => HashMap.fromIterable(ids.map((id, i) => [id, (i + 1) * 10] as const))
/** Kinds by the run id's first letter: `a1`, `a2` one kind, `b1` another; `d...` has declines. */
const kindOf = (id: string) => (id.startsWith("d") ? undefined : id[0]!)

describe("the line of pending runs", () => {
  it("gives the first run of each kind, every run with declines, and the next of a kind once the one before has left", () => {
    const line = new Line()
    const pending = pendingOf("a1", "b1", "a2", "d1", "a3", "b2")
    expect(line.needsMaking(0)).toBe(true)
    line.make(pending, kindOf, 0)
    expect(line.needsMaking(1)).toBe(false)
    expect(line.heads(pending)).toEqual([
      { id: "a1", kind: "a" },
      { id: "b1", kind: "b" },
      { id: "d1", kind: undefined }
    ])
    // a1 placed, a2 stopped meanwhile: the next of kind a is a3.
    const later = HashMap.remove(HashMap.remove(pending, "a1"), "a2")
    expect(line.after("a", later)).toBe("a3")
    // The next round starts from where it was: a run that left is passed over.
    const next = HashMap.remove(later, "b1")
    expect(line.heads(next).map((h) => h.id)).toEqual(["a3", "b2", "d1"])
    // The last of its kind gone: none after it, and the kind is no longer asked about.
    const done = HashMap.remove(next, "a3")
    expect(line.after("a", done)).toBeUndefined()
    expect(line.heads(done).map((h) => h.id)).toEqual(["b2", "d1"])
  })

  it("says who is in line behind the first left unplaced, and how far along, leaving out runs that left", () => {
    const line = new Line()
    const pending = pendingOf("a1", "b1", "a2", "a3", "a4", "b2")
    line.make(pending, kindOf, 0)
    const now = HashMap.remove(pending, "a3")
    line.heads(now)
    line.leftUnplaced("a", "a1")
    expect(line.get("a2")).toEqual({ behind: "a1", ahead: 1 })
    expect(line.get("a3")).toBeUndefined()
    expect(line.get("a4")).toEqual({ behind: "a1", ahead: 2 })
    // b1 was placed (not left unplaced): b2 is not in line behind anything.
    expect(line.get("b2")).toBeUndefined()
    expect(line.get("a1")).toBeUndefined()
  })

  it("takes runs submitted since at the end of their kind's line, once, in submission order; a run pending again has it made anew", () => {
    const line = new Line()
    let pending = pendingOf("a1", "a2")
    line.make(pending, kindOf, 0)
    // Submitted as the line was made (in both) and after it: a3 is held once.
    pending = HashMap.set(HashMap.set(HashMap.set(pending, "b1", 40), "a3", 30), "d1", 50)
    line.add("a2")
    line.add("b1")
    line.add("a3")
    line.add("d1")
    line.join(pending, kindOf)
    expect(line.heads(pending)).toEqual([
      { id: "a1", kind: "a" },
      { id: "b1", kind: "b" },
      { id: "d1", kind: undefined }
    ])
    line.leftUnplaced("a", "a1")
    expect(line.get("a2")).toEqual({ behind: "a1", ahead: 1 })
    expect(line.get("a3")).toEqual({ behind: "a1", ahead: 2 })
    // A run declined or superseded is pending again with its old place: the line is made again.
    line.invalidate()
    expect(line.needsMaking(1)).toBe(true)
    // Made at least every REMAKE_MS, whatever happened.
    line.make(pending, kindOf, 1)
    expect(line.needsMaking(1 + REMAKE_MS - 1)).toBe(false)
    expect(line.needsMaking(1 + REMAKE_MS)).toBe(true)
  })
})
