/** What `svc runs show` and `svc run --wait` print, from the owner's answers. */
import { describe, expect, it } from "vitest"
import type { RunDetail, RunView } from "../../src/app/runs/Dispatcher.js"
import { AWAITING_WORKERS, IN_LINE } from "../../src/app/runs/RunViews.js"
import { lasted, preferenceEffect, progressLine, showLines, stopsLines, worthSaying } from "../../src/cli/commands/runs.js"

const view: RunView = {
  id: "rAbc123",
  address: "hello:remote@1.0.0",
  state: "running",
  submittedAt: "2026-11-24T20:55:00.000Z",
  finishedAt: null,
  host: "lab-1",
  attempts: 1,
  explanation: "placed on worker 'lab-1'; excluded: owner (eligibility: lacks label pool=lab)",
  result: null,
  error: null
}

const attempt = {
  n: 1,
  id: "rAbc123.1",
  host: "wMKUwv3YNB2",
  hostName: "lab-1",
  state: "running" as const,
  holdsSlot: true,
  assignedAt: "2026-11-24T20:55:00.000Z",
  startedAt: "2026-11-24T20:55:00.000Z",
  fence: 1,
  endedAt: null,
  reason: null,
  waitingForSlotSince: null
}

const detail = (over: Partial<RunDetail> = {}): RunDetail =>
  ({
    ...view,
    input: { text: "hi" },
    preferredLabels: [],
    job: { executor: "node", remoteEligible: true, ownerOnly: [] },
    placement: null,
    attemptRecords: [attempt],
    output: { attempt: "rAbc123.1", stdout: "", stderr: "", removed: false },
    ...over
  }) as unknown as RunDetail

describe("svc runs show", () => {
  it("says an attempt waits on its worker for a free slot, and since when", () => {
    const waiting = showLines(detail({ attemptRecords: [{ ...attempt, waitingForSlotSince: "2026-11-24T20:55:01.120Z" }] }))
    expect(waiting).toContain(
      "attempt rAbc123.1 on lab-1: running; holds a slot; not started yet: waiting there since 2026-11-24T20:55:01.120Z for a free slot (other work holds the machine's slots)"
    )
    expect(showLines(detail())).toContain("attempt rAbc123.1 on lab-1: running; holds a slot")
    // A name another worker of the fleet carries: with the id, as the explanation says it.
    expect(showLines(detail({ attemptRecords: [{ ...attempt, hostNameShared: true }] }))).toContain(`attempt rAbc123.1 on lab-1 (${attempt.host}): running; holds a slot`)
  })

  it("shows the stated preference, and what it did: locality comes before it", () => {
    const record = { executionHost: "owner", inferenceEndpoint: null, requestedModel: null, resolvedModel: null, selectionProvenance: "locality: the owner keeps what it can run", limits: { timeoutMs: null, bounds: [] } }
    const placement = { outcome: "placed", host: "owner", explanation: "placed on owner", key: "k", record, notes: [], at: "2026-11-24T20:55:00.000Z", sequence: 1 }
    const lines = showLines(detail({ preferredLabels: ["pool=lab"], placement } as unknown as Partial<RunDetail>))
    expect(lines).toContain("  preferred: pool=lab; not weighed: the owner keeps what it can run, before any preference")
    expect(showLines(detail({ placement } as unknown as Partial<RunDetail>)).some((l) => l.includes("preferred:"))).toBe(false)
    expect(preferenceEffect("stated preference")).toBe("it chose the host")
    expect(preferenceEffect("the only eligible candidate with room")).toBe("not weighed: one eligible host had room")
    expect(preferenceEffect("deterministic tie-break among 3 equally ranked candidates")).toBe("no host with room had more of it than the others")
    expect(preferenceEffect("none: no candidate is eligible")).toBe("weighed once a host can take it")
    // Stopped before any host could take it: it never will be.
    expect(preferenceEffect("none: no candidate is eligible", true)).toBe("never weighed: no host could take it")
  })

  it("says a run the owner, just started, has not decided while its workers call back, and what was decided before the restart, without that decision's record", () => {
    const record = { executionHost: null, inferenceEndpoint: null, requestedModel: null, resolvedModel: null, selectionProvenance: "none: no host has room", limits: { timeoutMs: null, bounds: [] } }
    const before = { outcome: "waiting", host: null, explanation: "waiting; excluded: worker 'lab-1' (capacity: slots: 2 of 2 in use)", key: "k", record, notes: [], at: "2026-11-24T20:55:00.000Z", sequence: 1 }
    const pending = { state: "pending", host: null, attemptRecords: [], explanation: AWAITING_WORKERS, awaitingWorkers: true }
    expect(showLines(detail(pending as unknown as Partial<RunDetail>))).toContain(`placement: ${AWAITING_WORKERS}`)
    const lines = showLines(detail({ ...pending, placement: before } as unknown as Partial<RunDetail>))
    expect(lines).toContain(`placement: ${AWAITING_WORKERS}; decided before: waiting; excluded: worker 'lab-1' (capacity: slots: 2 of 2 in use)`)
    expect(lines.some((l) => l.includes("selection:"))).toBe(false)
    expect(progressLine({ ...view, ...pending } as RunView)).toBe(`run rAbc123 pending: ${AWAITING_WORKERS}`)
  })

  it("says a run in line behind the first of its kind: how many are before it, which is first and why it is not placed; the run's own earlier decision beside it, without its record", () => {
    const record = { executionHost: null, inferenceEndpoint: null, requestedModel: null, resolvedModel: null, selectionProvenance: "none: no host has room", limits: { timeoutMs: null, bounds: [] } }
    const why = "waiting; excluded: worker 'lab-1' (capacity: slots: 2 of 2 in use)"
    const pending = { state: "pending", host: null, attemptRecords: [], explanation: IN_LINE, inLine: { behind: "rFirst00001", ahead: 1204, behindExplanation: why } }
    const said = `in line: 1,204 earlier runs of hello:remote@1.0.0 with the same requirements are pending before it and placed first; the first, rFirst00001: ${why}`
    expect(showLines(detail(pending as unknown as Partial<RunDetail>))).toContain(`placement: ${said}`)
    const before = { outcome: "waiting", host: null, explanation: why, key: "k", record, notes: [], at: "2026-11-24T20:55:00.000Z", sequence: 1 }
    const lines = showLines(detail({ ...pending, placement: before } as unknown as Partial<RunDetail>))
    expect(lines).toContain(`placement: ${said}; its own decision before: ${why}`)
    expect(lines.some((l) => l.includes("selection:"))).toBe(false)
    expect(progressLine({ ...view, ...pending } as RunView)).toBe(`run rAbc123 pending: ${said}`)
    expect(progressLine({ ...view, ...pending, inLine: { ...pending.inLine, ahead: 1 } } as RunView)).toContain("in line: 1 earlier run of hello:remote@1.0.0 with the same requirements is pending before it")
  })

  it("says what stopping several runs did: each run stopped up to 20 (beyond, how many), each refusal, and the total", () => {
    const stopped = (id: string, host: string | null = null) => ({ ...view, id, state: "stopped", host }) as RunView
    const refusal = { run: "rDone0000001", code: "run-finished", message: "run rDone0000001 has finished already (succeeded)" }
    expect(stopsLines({ stopped: [stopped("rA"), stopped("rB", "lab-1")], refused: [refusal] }, "runs named")).toEqual([
      "stopped run rA",
      "stopped run rB (on lab-1, told to stop it)",
      "run rDone0000001 not stopped: run rDone0000001 has finished already (succeeded)",
      "stopped 2 of 3 runs named; 1 refused (above)"
    ])
    const many = Array.from({ length: 1204 }, (_, i) => stopped(`r${i}`))
    expect(stopsLines({ stopped: many, refused: [] }, "pending runs of bl:remote@1.0.0")).toEqual(["stopped 1,204 of 1,204 pending runs of bl:remote@1.0.0"])
  })

  it("says when the output shown is its end, how much is not shown, and where all of it is", () => {
    const output = { attempt: "rAbc123.1", stdout: "line 9\n", stderr: "", removed: false, skipped: { stdout: 123456, stderr: 0 }, files: { stdout: "/h/runs/rAbc123.1.stdout", stderr: "/h/runs/rAbc123.1.stderr" } }
    expect(showLines(detail({ output } as unknown as Partial<RunDetail>)).slice(-2)).toEqual([
      "stdout (rAbc123.1, its end: 123,456 bytes before it are not shown; all of it: /h/runs/rAbc123.1.stdout):",
      "  line 9"
    ])
    expect(showLines(detail({ output: { ...output, skipped: { stdout: 0, stderr: 0 } } } as unknown as Partial<RunDetail>)).slice(-2)).toEqual(["stdout (rAbc123.1):", "  line 9"])
  })

  it("says how a reported attempt ended, and on a run stopped before its report came, that it is not the run's outcome (it said 'reported' alone)", () => {
    const ended = { ...attempt, state: "reported", holdsSlot: false, startedAt: "2026-11-24T20:55:01.000Z", endedAt: "2026-11-24T20:55:13.345Z" }
    const line = (a: object, state: RunDetail["state"]) => showLines(detail({ state, attemptRecords: [a] } as unknown as Partial<RunDetail>)).find((l) => l.startsWith("attempt "))
    expect(line({ ...ended, ok: true }, "succeeded")).toBe("attempt rAbc123.1 on lab-1: reported: succeeded; 12.3 s from its start to its end")
    expect(line({ ...ended, ok: false, reason: "exit code 3" }, "failed")).toBe("attempt rAbc123.1 on lab-1: reported: failed (exit code 3); 12.3 s from its start to its end")
    expect(line({ ...ended, ok: true }, "stopped")).toBe(
      "attempt rAbc123.1 on lab-1: reported: succeeded, after the run was stopped (stop wins: not the run's outcome, and no result is kept); 12.3 s from its start to its end"
    )
    expect(line({ ...ended, ok: false, reason: null }, "stopped")).toContain("reported: failed, after the run was stopped")
    // An owner from before attempts kept it says nothing more.
    expect(line(ended, "stopped")).toBe("attempt rAbc123.1 on lab-1: reported; 12.3 s from its start to its end")
  })

  it("says how long an attempt that ended took", () => {
    const ended = { ...attempt, state: "reported", holdsSlot: false, startedAt: "2026-11-24T20:55:01.000Z", endedAt: "2026-11-24T20:55:13.345Z" }
    expect(showLines(detail({ attemptRecords: [ended] } as unknown as Partial<RunDetail>))).toContain("attempt rAbc123.1 on lab-1: reported; 12.3 s from its start to its end")
    // A worker's report says how long the job ran: said when the report came much later (the owner was away).
    const late = { ...ended, endedAt: "2026-11-24T20:55:59.100Z", ranMs: 3_020 }
    expect(showLines(detail({ attemptRecords: [late] } as unknown as Partial<RunDetail>))).toContain(
      "attempt rAbc123.1 on lab-1: reported; ran 3.02 s (its report reached the owner 58.1 s after its start)"
    )
    // The owner's own attempt that waited for a slot (other owners' work on this machine held them).
    const waited = { ...late, host: "owner", hostName: "owner" }
    expect(showLines(detail({ attemptRecords: [waited] } as unknown as Partial<RunDetail>))).toContain(
      "attempt rAbc123.1 on owner: reported; ran 3.02 s (it ended 58.1 s after its start: the rest it waited, for a free slot or for its outcome to be recorded)"
    )
    const prompt = { ...ended, ranMs: 12_100 }
    expect(showLines(detail({ attemptRecords: [prompt] } as unknown as Partial<RunDetail>))).toContain("attempt rAbc123.1 on lab-1: reported; 12.3 s from its start to its end")
    // An owner from before ISO times in the detail gave epoch milliseconds.
    const older = { ...ended, startedAt: 1_000, endedAt: 13_345 }
    expect(showLines(detail({ attemptRecords: [older] } as unknown as Partial<RunDetail>))).toContain("attempt rAbc123.1 on lab-1: reported; 12.3 s from its start to its end")
    expect(showLines(detail()).find((l) => l.startsWith("attempt "))).not.toContain("from its start")
    // Ceased, perhaps superseded first (a lapse): not "to its end", which the owner did not see.
    const ceased = { ...ended, state: "ceased", reason: "its advertisement lapsed", endedAt: "2026-11-24T20:55:14.800Z" }
    expect(showLines(detail({ attemptRecords: [ceased] } as unknown as Partial<RunDetail>))).toContain(
      "attempt rAbc123.1 on lab-1: ceased (its advertisement lapsed); 13.8 s from its start until it stopped counting"
    )
    // Superseded, it no longer counts, but whether it ended there is not known.
    const superseded = { ...attempt, state: "superseded", holdsSlot: true, reason: "its worker was revoked", startedAt: "2026-11-24T20:55:01.000Z", endedAt: "2026-11-24T20:55:03.630Z" }
    expect(showLines(detail({ attemptRecords: [superseded] } as unknown as Partial<RunDetail>))).toContain(
      "attempt rAbc123.1 on lab-1: superseded (its worker was revoked); 2.63 s from its start until it was superseded; holds a slot"
    )
    expect([lasted(350), lasted(9_999), lasted(12_340), lasted(252_000), lasted(7_500_000)]).toEqual(["0.35 s", "10.00 s", "12.3 s", "4 min 12 s", "2 h 5 min"])
  })

  it("points to the run's history once it was placed more than once", () => {
    const hint = "every placement decision, and why each attempt ended: svc journal history rAbc123"
    expect(showLines(detail())).not.toContain(hint)
    const superseded = { ...attempt, state: "superseded" as const, holdsSlot: false, reason: "its worker's advertisement lapsed (no refresh for 15 s)" }
    expect(showLines(detail({ attempts: 2, attemptRecords: [superseded, { ...attempt, n: 2, id: "rAbc123.2" }] }))).toContain(hint)
  })

  it("says which identity ran an attempt when two of its hosts share a name (a machine that joined again)", () => {
    const first = { ...attempt, host: "wOldOldOld1", state: "superseded" as const, holdsSlot: false, reason: "its worker was revoked" }
    const lines = showLines(detail({ attempts: 2, attemptRecords: [first, { ...attempt, n: 2, id: "rAbc123.2" }] }))
    expect(lines.filter((l) => l.startsWith("attempt "))).toEqual([
      "attempt rAbc123.1 on lab-1 (wOldOldOld1): superseded (its worker was revoked)",
      "attempt rAbc123.2 on lab-1 (wMKUwv3YNB2): running; holds a slot"
    ])
  })

  it("--wait's progress names the host with its id when another worker carries its name; an owner that sends no hostId reads as before", () => {
    expect(progressLine({ ...view, hostId: "wNew1234567", hostNameShared: true })).toBe("run rAbc123 running on lab-1 (wNew1234567)")
    expect(progressLine({ ...view, hostId: "wNew1234567" })).toBe("run rAbc123 running on lab-1")
    expect(progressLine(view)).toBe("run rAbc123 running on lab-1")
  })

  it("reads an answer from an owner that does not give waitingForSlotSince", () => {
    const { waitingForSlotSince: _, ...older } = attempt
    expect(showLines(detail({ attemptRecords: [older as typeof attempt] }))).toContain("attempt rAbc123.1 on lab-1: running; holds a slot")
  })
})

describe("svc run --wait", () => {
  it("says a run that is not placed, with why; later changes; not the ordinary start of a run placed at once", () => {
    const blocked: RunView = { ...view, state: "pending", host: null, attempts: 0, explanation: "blocked; excluded: owner (eligibility: lacks label pool=lab)" }
    expect(worthSaying(blocked, false)).toBe(true)
    expect(progressLine(blocked)).toBe("run rAbc123 pending: blocked; excluded: owner (eligibility: lacks label pool=lab)")
    expect(worthSaying(view, false)).toBe(false)
    expect(worthSaying(view, true)).toBe(true)
    expect(progressLine(view)).toBe("run rAbc123 running on lab-1")
    const again: RunView = { ...view, state: "assigned", host: "lab-2", attempts: 2 }
    expect(worthSaying(again, false)).toBe(true)
    expect(progressLine(again)).toBe("run rAbc123 assigned on lab-2 (attempt 2)")
  })

  it("says a run pending again after its attempt ended (declined, superseded) as such, not by the decision that placed it", () => {
    const declined: RunView = { ...view, state: "pending", host: null, attempts: 1, explanation: "placed on worker 'lab-1'; excluded: owner (eligibility: lacks label pool=lab)" }
    expect(progressLine(declined)).toBe("run rAbc123 pending: its attempt 1 ended (svc runs show rAbc123 says how); it is placed again")
  })
})
