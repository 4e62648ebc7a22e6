/** What `svc journal replay` prints, from its report. */
import { describe, expect, it } from "vitest"
import { retentionNotCompared } from "../../src/cli/commands/journal.js"

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
