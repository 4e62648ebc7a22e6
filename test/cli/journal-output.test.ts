/** What `svc journal replay` prints, from its report. */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { ownerAtEnd, placementAuditLine, replayedLine, retentionNotCompared } from "../../src/cli/commands/journal/replay.js"

describe("a checkpoint folded keeping another number of settled runs", () => {
  it("names where this replay took its number, and what to do when the owner was started with another (it said the setting changed)", () => {
    expect(retentionNotCompared(1, 5000, "default")).toBe(
      "written while the owner kept 1 settled run per generation, this replay kept 5000 (the default: set in neither this command's environment nor svc.yaml): if the owner was started with SVC_WORKFLOW_RETAINED_RUNS=1, set it for this command too (SVC_WORKFLOW_RETAINED_RUNS=1 svc journal replay) or in svc.yaml; if the setting changed since, a running owner writes a current one within 5 minutes"
    )
    expect(retentionNotCompared(2, 3, "svc.yaml")).toContain("written while the owner kept 2 settled runs per generation, this replay kept 3 (from svc.yaml): if the owner was started with SVC_WORKFLOW_RETAINED_RUNS=2, set it for this command too")
    expect(retentionNotCompared(2, 4, "environment")).toContain("this replay kept 4 (from this command's environment): ")
  })

  it("with the running owner's number, says the setting changed since the checkpoint", () => {
    expect(retentionNotCompared(2, 3, "owner")).toBe(
      "written while the owner kept 2 settled runs per generation, this replay kept 3, as the running owner does: SVC_WORKFLOW_RETAINED_RUNS changed since; it writes a current one within 5 minutes"
    )
  })
})

describe("replay --audit", () => {
  it("counts its events and decisions in words that agree with the number (it said 1 decisions)", () => {
    expect(replayedLine(1, 1, 0.001, 1000)).toBe("replayed 1 event (to sequence 1) in 0.00 s, 1000 events/s")
    expect(replayedLine(8, 8, 0.5, 16)).toBe("replayed 8 events (to sequence 8) in 0.50 s, 16 events/s")
    expect(placementAuditLine(1, 0.012, 1, 0)).toBe("placement audit: 1 decision re-run through the current placement code in 0.01 s: 1 reproduced, 0 diverged")
    expect(placementAuditLine(3, 1.5, 2, 1)).toBe("placement audit: 3 decisions re-run through the current placement code in 1.50 s: 2 reproduced, 1 diverged")
  })
})

describe("the running owner's state compared at the journal's end", () => {
  const asked = { sequence: 12, state: { asked: "again" } }
  const atEnd = (first: Parameters<typeof ownerAtEnd>[0], took: Duration.Duration, head: number) => {
    let again = 0
    const answer = Effect.runSync(ownerAtEnd(first, took, head, Effect.sync(() => (again++, asked))))
    return { answer, again }
  }

  it("is the first answer when the owner has not moved since, however long it took", () => {
    const first = { sequence: 10, state: {} }
    expect(atEnd(first, Duration.millis(5), 10)).toEqual({ answer: first, again: 0 })
    expect(atEnd(first, Duration.seconds(30), 10)).toEqual({ answer: first, again: 0 })
  })

  it("is asked again when the owner moved and answered promptly", () => {
    expect(atEnd({ sequence: 10, state: {} }, Duration.millis(9_999), 12)).toEqual({ answer: asked, again: 1 })
  })

  it("is not asked again when its first answer was slow (a saturated owner was waited for, and said to be slow, twice)", () => {
    expect(atEnd({ sequence: 10, state: {} }, Duration.seconds(14.4), 12)).toEqual({
      answer: "the owner answered in 14 s at sequence 10, and the journal has moved past it since (to 12); an owner that slow is not asked twice",
      again: 0
    })
    expect(atEnd({ sequence: 10, state: {} }, Duration.seconds(10), 12).again).toBe(0)
  })

  it("keeps why there was none (none running, or it did not answer) without asking again", () => {
    expect(atEnd(undefined, Duration.millis(1), 3)).toEqual({ answer: undefined, again: 0 })
    expect(atEnd("it did not answer within 60 s", Duration.seconds(60), 3)).toEqual({ answer: "it did not answer within 60 s", again: 0 })
  })
})
