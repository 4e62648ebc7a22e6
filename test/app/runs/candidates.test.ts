/**
 * The candidates a placement sees: what each worker advertised, as the job asks about it, in
 * lists shared from one decision to the next until the worker advertises something else (the
 * feasibility cache and the journal's packing do less work on shared lists).
 */
import { describe, expect, it } from "vitest"
import { CURRENT_VERSION, WorkerAdvertised, type Envelope, type Event, type RunJob } from "../../../src/domain/journal/Events.js"
import { evolve, initialState, type OwnerState } from "../../../src/domain/journal/OwnerState.js"
import { makeCandidates } from "../../../src/app/runs/Candidates.js"
import { invited, joined, revoked } from "../../support/events.js"

const fold = (events: ReadonlyArray<Event>, from: OwnerState = initialState): OwnerState =>
  events.reduce((s, event, i) => {
    const stream = event._tag === "WorkerInvited" || event._tag === "WorkerJoined" ? `invite-${event.inviteId}` : `worker-${(event as { workerId: string }).workerId}`
    const envelope: Envelope = { sequence: s.sequence + i + 1, stream, streamVersion: 1, type: event._tag, schemaVersion: CURRENT_VERSION[event._tag], recordedAt: 0, event }
    return evolve(s, envelope)
  }, from)

const job = (address: string, requiredBins: ReadonlyArray<string> = []): RunJob => ({
  address,
  bag: address.split(":")[0]!,
  job: "j",
  digest: "sha256:d",
  executor: "node",
  remoteEligible: true,
  ownerOnly: [],
  requiredLabels: [],
  requiredBins,
  bounds: [],
  timeoutMs: null
})
const offer = (at: number, labels = ["pool=a"]) =>
  new WorkerAdvertised({
    workerId: "w1",
    capacity: 2,
    labels,
    capabilities: ["node", "bin:git", "bin:ffmpeg"],
    artifacts: [{ address: "a:j@1.0.0", digest: "sha256:d" }, { address: "b:j@1.0.0", digest: "sha256:e" }],
    at
  })

describe("candidates", () => {
  const { candidatesFor } = makeCandidates({ labels: ["os=linux"], capabilities: ["node", "process"], capacity: 4 }, () => true)
  const linked = fold([invited("i"), joined("w1", "i"), offer(1)])

  it("shows each worker as the job asks about it: executors apart from programs, the programs and artifact it needs", () => {
    const [owner, w1] = candidatesFor(linked, job("a:j@1.0.0", ["git"]), 10, [])
    expect(owner).toMatchObject({ id: "owner", isOwner: true, labels: ["os=linux"], slots: { capacity: 4, used: 0 } })
    expect(w1).toMatchObject({ id: "w1", capabilities: ["node"], bins: ["git"], artifacts: [{ address: "a:j@1.0.0", digest: "sha256:d" }], revoked: false, slots: { capacity: 2, used: 0 } })
  })

  it("shares a worker's lists between decisions until it advertises something else", () => {
    const first = candidatesFor(linked, job("a:j@1.0.0"), 10, [])[1]!
    const again = candidatesFor(linked, job("a:j@1.0.0"), 20, [])[1]!
    expect([again.labels, again.capabilities, again.bins, again.artifacts, again.scope]).toEqual([first.labels, first.capabilities, first.bins, first.artifacts, first.scope])
    for (const k of ["labels", "capabilities", "bins", "artifacts", "scope"] as const) expect(again[k]).toBe(first[k])
    const changed = candidatesFor(fold([offer(2, ["pool=b"])], linked), job("a:j@1.0.0"), 30, [])[1]!
    expect(changed.labels).toEqual(["pool=b"])
    expect(changed.capabilities).not.toBe(first.capabilities)
    // Another job asks about other artifacts: its own list.
    expect(candidatesFor(linked, job("b:j@1.0.0"), 40, [])[1]!.artifacts).toEqual([{ address: "b:j@1.0.0", digest: "sha256:e" }])
  })

  it("a host whose view did not change is the very same candidate in the next decision; one slot promised more makes a new one", () => {
    const [owner, w1] = candidatesFor(linked, job("a:j@1.0.0"), 10, [])
    const [ownerAgain, w1Again] = candidatesFor(linked, job("a:j@1.0.0"), 20, [])
    expect(ownerAgain).toBe(owner)
    expect(w1Again).toBe(w1)
    const busier = candidatesFor(linked, job("a:j@1.0.0"), 30, [], new Map([["w1", 1]]))[1]!
    expect(busier).not.toBe(w1)
    expect(busier).toMatchObject({ id: "w1", slots: { capacity: 2, used: 1 } })
    // Another job: its own candidates, with the artifacts it asks about.
    expect(candidatesFor(linked, job("b:j@1.0.0"), 40, [])[1]).not.toBe(w1)
  })

  it("a revoked worker is a candidate marked revoked (placement excludes it, and says so)", () => {
    expect(candidatesFor(fold([revoked("w1")], linked), job("a:j@1.0.0"), 10, [])[1]).toMatchObject({ id: "w1", revoked: true })
  })
})
