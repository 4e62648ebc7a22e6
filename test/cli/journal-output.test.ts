/** What `svc journal replay` prints, from its report. */
import { describe, expect, it } from "vitest"
import { placementAuditLine, replayedLine, retentionNotCompared } from "../../src/cli/commands/journal/replay.js"

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
