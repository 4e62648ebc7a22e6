/** The three placement layers: every exclusion code, the layers' order, blocked vs waiting. */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { makeFeasibilityCache } from "../../../src/domain/placement/Feasibility.js"
import { BOUNDS_CAPABILITY, capacity, eligibility, explain, place, PLACEMENT_RULES, sharedNames, type Activity, type Candidate, type Quotas } from "../../../src/domain/placement/Placement.js"

const job = "hasher:checksum@1.0.0"
const activity: Activity = { id: "a1", address: job, digest: "sha256:d1", executor: "node", remoteEligible: true, requiredLabels: [], requiredBins: [], preferredLabels: [], bounds: [], declinedBy: [] }
const owner: Candidate = {
  id: "owner",
  name: "owner",
  isOwner: true,
  revoked: false,
  advertisementAlive: true,
  scope: [],
  labels: ["os=linux"],
  capabilities: ["node", "process"],
  bins: [],
  artifacts: [{ address: job, digest: "sha256:d1" }],
  slots: { capacity: 4, used: 0 }
}
const worker = (id: string, over: Partial<Candidate> = {}): Candidate => ({ ...owner, id, name: `lab-${id}`, isOwner: false, ...over })
const free: Quotas = { logical: null, endpoint: null }

describe("layer 1, eligibility", () => {
  it.each([
    ["revoked", worker("w", { revoked: true }), activity],
    ["advertisement-expired", worker("w", { advertisementAlive: false }), activity],
    ["not-remote-eligible", worker("w"), { ...activity, remoteEligible: false }],
    ["out-of-scope", worker("w", { scope: ["other:job@1"] }), activity],
    ["job-not-held", worker("w", { artifacts: [] }), activity],
    ["digest-mismatch", worker("w", { artifacts: [{ address: job, digest: "sha256:other" }] }), activity],
    ["missing-capability", worker("w", { capabilities: ["process"] }), activity],
    ["missing-label", worker("w"), { ...activity, requiredLabels: ["gpu=true"] }],
    ["missing-bin", worker("w"), { ...activity, requiredBins: ["ffmpeg"] }],
    ["bounds-unenforceable", worker("w"), { ...activity, bounds: ["no-network"] }],
    ["declined", worker("w"), { ...activity, declinedBy: ["w"] }]
  ] as const)("%s excludes, and a candidate without the fault passes", (code, candidate, a) => {
    expect(eligibility(candidate, a).map((e) => e.code)).toEqual([code])
    expect(
      eligibility(worker("ok", { bins: ["ffmpeg"], labels: ["gpu=true"], capabilities: ["node", "process", "bounds"] }), { ...a, remoteEligible: true })
    ).toEqual([])
  })

  it("says of a decline that stands, since revision 3, until when it stands; earlier decisions as they said it", () => {
    const text = (rules: number | undefined) => {
      const a: Activity = rules === undefined ? { ...activity, declinedBy: ["w"] } : { ...activity, declinedBy: ["w"], rules }
      return eligibility(worker("w"), a).map((e) => [e.code, e.text])
    }
    expect(text(PLACEMENT_RULES)).toEqual([["declined", "it declined an earlier attempt of this activity, and has not advertised since (or declined it 3 times)"]])
    for (const rules of [undefined, 1, 2]) expect(text(rules)).toEqual([["declined", "it declined an earlier attempt of this activity"]])
    // The owner declines only an attempt whose pinned bag it no longer holds, and says that.
    expect(eligibility(owner, { ...activity, declinedBy: ["owner"], rules: PLACEMENT_RULES }).map((e) => [e.code, e.text])).toEqual([
      ["declined", "it declined an earlier attempt of this activity: the bag the run pins is no longer installed on it"]
    ])
  })

  it("says why an advertisement is not alive when the owner knows: one code, advertisement-expired, whatever the cause", () => {
    const said = (over: Partial<Candidate>) => eligibility(worker("w", { advertisementAlive: false, ...over }), activity).map((e) => [e.code, e.text])
    expect(said({})).toEqual([["advertisement-expired", "its advertisement expired (no refresh for 15 s)"]])
    expect(said({ silence: "ended" })).toEqual([["advertisement-expired", "its svc serve stopped cleanly (it said so)"]])
    expect(said({ silence: "unheard" })).toEqual([["advertisement-expired", "no advertisement from it since the owner started"]])
    // Nothing advertised yet: what it lacks follows from that, and is not listed.
    expect(said({ silence: "never", artifacts: [], capabilities: [], labels: [] })).toEqual([["advertisement-expired", "it has not advertised yet"]])
    // A new session not yet advertised: what its last advertisement (its previous process's)
    // lacks is not said either, nor what it has (fleet audit: "lacks label tpu=true" of a worker
    // restarted with it).
    expect(said({ silence: "hello", artifacts: [], labels: [] })).toEqual([
      ["advertisement-expired", "it started a new session (said hello) and has not advertised in it yet: what it offers now is not known"]
    ])
  })

  it("a job that is not remote-eligible: a worker is not also said not to hold it (it never advertises one), but was by revision 1 of the rules", () => {
    const local = { ...activity, remoteEligible: false, rules: PLACEMENT_RULES }
    const codes = (c: Candidate, a: Activity) => eligibility(c, a).map((e) => e.code)
    expect(codes(worker("w", { artifacts: [] }), local)).toEqual(["not-remote-eligible"])
    expect(codes(worker("w", { artifacts: [{ address: job, digest: "sha256:other" }] }), local)).toEqual(["not-remote-eligible"])
    // What it does know of the worker is still said.
    expect(codes(worker("w", { artifacts: [], revoked: true, scope: ["other:job@1"] }), { ...local, requiredLabels: ["gpu=true"] })).toEqual(["revoked", "not-remote-eligible", "out-of-scope", "missing-label"])
    // A decision recorded before revisions (no `rules`) is judged as it was made.
    const { rules: _, ...unrevised } = local
    expect(codes(worker("w", { artifacts: [] }), unrevised)).toEqual(["not-remote-eligible", "job-not-held"])
    expect(codes(worker("w", { artifacts: [] }), { ...local, rules: 1 })).toEqual(["not-remote-eligible", "job-not-held"])
    // A job that may go to workers is checked for holding under every revision.
    expect(codes(worker("w", { artifacts: [] }), { ...activity, rules: PLACEMENT_RULES })).toEqual(["job-not-held"])
    // The verdicts cached across decisions are per revision too.
    const cache = makeFeasibilityCache()
    const candidates = [owner, worker("w", { artifacts: [] })]
    const verdictOf = (a: Activity) => place(a, candidates, free, cache).verdicts.find((v) => v.candidate === "w")!.exclusions.map((e) => e.code)
    expect(verdictOf({ ...unrevised, id: "a2" })).toEqual(["not-remote-eligible", "job-not-held"])
    expect(verdictOf({ ...local, id: "a3" })).toEqual(["not-remote-eligible"])
  })

  it("the owner is never excluded for scope, holding or remote eligibility, but is for what it lacks", () => {
    expect(eligibility(owner, { ...activity, remoteEligible: false })).toEqual([])
    expect(eligibility(owner, { ...activity, requiredLabels: ["gpu=true"] }).map((e) => e.text)).toEqual(["lacks label gpu=true"])
  })

  it("records every reason of the failing layer", () => {
    const all = eligibility(worker("w", { revoked: true, scope: ["x:y@1"], capabilities: [] }), { ...activity, requiredLabels: ["gpu=true"] })
    expect(all.map((e) => e.code)).toEqual(["revoked", "out-of-scope", "missing-capability", "missing-label"])
  })
})

describe("layer 2, capacity", () => {
  it.each([
    ["no-physical-slot", worker("w", { slots: { capacity: 4, used: 4 } }), free, { used: 4, capacity: 4 }],
    ["no-logical-quota", worker("w"), { logical: { capacity: 16, used: 16 }, endpoint: null }, { used: 16, capacity: 16 }],
    ["no-endpoint-capacity", worker("w"), { logical: null, endpoint: { capacity: 2, used: 2 } }, { used: 2, capacity: 2 }]
  ] as const)("%s excludes with requested, used and capacity", (code, candidate, quotas, numbers) => {
    expect(capacity(candidate, quotas)).toEqual([expect.objectContaining({ layer: "capacity", code, requested: 1, ...numbers })])
  })

  it("one slot left is room", () => {
    expect(capacity(worker("w", { slots: { capacity: 4, used: 3 } }), free)).toEqual([])
  })
})

describe("the outcome", () => {
  it("keeps what the owner can run on the owner (locality first)", () => {
    const o = place(activity, [worker("w1"), owner, worker("w2")], free)
    expect(o).toMatchObject({ outcome: "placed", host: "owner" })
  })

  it("then prefers the stated preference, then a deterministic tie-break", () => {
    const a = { ...activity, preferredLabels: ["zone=lab"] }
    const busyOwner = { ...owner, slots: { capacity: 1, used: 1 } }
    expect(place(a, [busyOwner, worker("w1"), worker("w2", { labels: ["os=linux", "zone=lab"] })], free)).toMatchObject({ outcome: "placed", host: "w2" })
    const first = place(activity, [busyOwner, worker("w1"), worker("w2")], free)
    expect(place(activity, [worker("w2"), worker("w1"), busyOwner], free)).toMatchObject({ outcome: "placed", host: first.outcome === "placed" ? first.host : "" })
  })

  it("is blocked when no candidate is eligible, waiting when an eligible one has no room", () => {
    const gpu = { ...activity, requiredLabels: ["gpu=true"] }
    expect(place(gpu, [owner, worker("w1")], free).outcome).toBe("blocked")
    const fullGpu = worker("w2", { labels: ["gpu=true"], slots: { capacity: 2, used: 2 } })
    const waiting = place(gpu, [owner, worker("w1"), fullGpu], free)
    expect(waiting.outcome).toBe("waiting")
    expect(explain(waiting)).toBe(
      "waiting; excluded: owner (eligibility: lacks label gpu=true), worker 'lab-w1' (eligibility: lacks label gpu=true), worker 'lab-w2' (capacity: slots: 2 of 2 in use)"
    )
  })

  it("explains the first hosts and counts the rest when asked for a bounded explanation", () => {
    const o = place({ ...activity, requiredLabels: ["gpu=true"] }, [owner, worker("w1"), worker("w2"), worker("w3")], free)
    expect(explain(o, 2)).toBe(
      "blocked; excluded: owner (eligibility: lacks label gpu=true), worker 'lab-w1' (eligibility: lacks label gpu=true), and 2 more hosts (every verdict: svc journal export)"
    )
    expect(explain(o, 3)).toMatch(/worker 'lab-w2' \(eligibility: lacks label gpu=true\), and 1 more host \(every verdict/)
    expect(explain(o, 4)).toBe(explain(o))
  })

  it("names revoked identities after the others, so that a bounded explanation names the live ones (a day of joins again hid them)", () => {
    const gone = (id: string) => worker(id, { revoked: true })
    const o = place({ ...activity, requiredLabels: ["gpu=true"] }, [owner, gone("w0a"), gone("w0b"), gone("w0c"), worker("w9")], free)
    expect(explain(o, 2)).toBe(
      "blocked; excluded: owner (eligibility: lacks label gpu=true), worker 'lab-w9' (eligibility: lacks label gpu=true), and 3 more hosts, all revoked (every verdict: svc journal export)"
    )
    expect(explain(o, 3)).toBe(
      "blocked; excluded: owner (eligibility: lacks label gpu=true), worker 'lab-w9' (eligibility: lacks label gpu=true), worker 'lab-w0a' (eligibility: revoked; lacks label gpu=true), and 2 more hosts, all revoked (every verdict: svc journal export)"
    )
    const mixed = place({ ...activity, requiredLabels: ["gpu=true"] }, [owner, gone("w0a"), worker("w8"), worker("w9")], free)
    expect(explain(mixed, 1)).toBe("blocked; excluded: owner (eligibility: lacks label gpu=true), and 3 more hosts, 1 of them revoked (every verdict: svc journal export)")
  })

  it("names a worker with its id when another candidate carries its name (a machine that joined again)", () => {
    const busyOwner = { ...owner, slots: { capacity: 1, used: 1 } }
    const old = worker("wOld", { name: "lab-1", revoked: true })
    const again = worker("wNew", { name: "lab-1" })
    expect(explain(place(activity, [busyOwner, old, again, worker("w2", { labels: ["gpu=true"], artifacts: [] })], free))).toBe(
      "placed on worker 'lab-1' (wNew); excluded: owner (capacity: slots: 1 of 1 in use), worker 'lab-w2' (eligibility: it does not hold hasher:checksum@1.0.0), worker 'lab-1' (wOld) (eligibility: revoked)"
    )
    // Names unique: no ids.
    expect(explain(place(activity, [busyOwner, again], free))).toBe("placed on worker 'lab-1'; excluded: owner (capacity: slots: 1 of 1 in use)")
  })

  it("finds a name shared by two ids, never by one id met twice nor by the owner", () => {
    const of = (hosts: ReadonlyArray<readonly [string, string]>) => sharedNames(hosts.length, (i) => hosts[i]![0], (i) => hosts[i]![1])
    expect(of([["w1", "lab-1"], ["w2", "lab-2"]])).toBeUndefined()
    expect(of([["w1", "lab-1"], ["w1", "lab-1"], ["owner", "owner"], ["owner", "owner"]])).toBeUndefined()
    expect([...(of([["w1", "lab-1"], ["w2", "lab-2"], ["w3", "lab-1"]]) ?? [])]).toEqual(["lab-1"])
  })

  it("never judges capacity for an ineligible candidate (a later layer never overrides an earlier one)", () => {
    const o = place({ ...activity, requiredLabels: ["gpu=true"] }, [worker("w", { slots: { capacity: 1, used: 1 } })], free)
    expect(o.verdicts[0]!.exclusions.map((e) => e.layer)).toEqual(["eligibility"])
  })
})

const candidateArb: fc.Arbitrary<Candidate> = fc.record({
  id: fc.constantFrom("owner", "w1", "w2", "w3", "w4"),
  revoked: fc.boolean(),
  alive: fc.boolean(),
  scoped: fc.boolean(),
  gpu: fc.boolean(),
  held: fc.constantFrom("yes", "no", "other-digest"),
  used: fc.integer({ min: 0, max: 4 })
}).map((r) =>
  r.id === "owner"
    ? { ...owner, labels: r.gpu ? ["gpu=true"] : [], slots: { capacity: 4, used: r.used } }
    : worker(r.id, {
        revoked: r.revoked,
        advertisementAlive: r.alive,
        scope: r.scoped ? ["other:job@1"] : [],
        labels: r.gpu ? ["gpu=true"] : [],
        artifacts: r.held === "no" ? [] : [{ address: job, digest: r.held === "yes" ? "sha256:d1" : "sha256:x" }],
        slots: { capacity: 4, used: r.used }
      })
)

describe("properties", () => {
  it("deterministic, never an excluded host, and blocked/waiting as defined", () => {
    fc.assert(
      fc.property(fc.uniqueArray(candidateArb, { selector: (c) => c.id, maxLength: 5 }), fc.boolean(), fc.boolean(), (cs, needGpu, eligible) => {
        const a = { ...activity, requiredLabels: needGpu ? ["gpu=true"] : [], remoteEligible: eligible }
        const o = place(a, cs, free)
        expect(place(a, [...cs].reverse(), free).outcome).toBe(o.outcome)
        const again = place(a, [...cs].reverse(), free)
        if (o.outcome === "placed" && again.outcome === "placed") expect(again.host).toBe(o.host)
        const ok = cs.filter((c) => eligibility(c, a).length === 0)
        const room = ok.filter((c) => capacity(c, free).length === 0)
        if (o.outcome === "placed") expect(room.map((c) => c.id)).toContain(o.host)
        else expect(o.outcome).toBe(ok.length === 0 ? "blocked" : "waiting")
        expect(o.verdicts).toHaveLength(cs.length)
      }),
      { numRuns: 500 }
    )
  })
})

// ---- The feasibility cache ----------------------------------------------------------------------

/** A worker's configuration as the registry would hold it: fresh lists each time it advertises. */
const configArb = fc.record({
  labels: fc.subarray(["gpu=true", "os=linux", "zone=eu"]),
  // Mostly able to run `node` jobs, so that many candidates pass layer 1 and a stale entry would show.
  capabilities: fc.oneof({ weight: 3, arbitrary: fc.constant(["node"]) }, { weight: 2, arbitrary: fc.subarray(["node", "process", BOUNDS_CAPABILITY]) }),
  bins: fc.subarray(["ffmpeg", "git"]),
  held: fc.constantFrom("yes", "no", "other-digest"),
  scoped: fc.boolean()
})
const stepArb = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("decide" as const),
      // Mostly a few recurring jobs (so entries are reused across the other steps), some drawn at random.
      requirements: fc.oneof(
        {
          weight: 3,
          arbitrary: fc.constantFrom(
            { requiredLabels: ["gpu=true"], requiredBins: [], executor: "node", address: job, remoteEligible: true, bounds: [] },
            { requiredLabels: ["os=linux"], requiredBins: ["ffmpeg"], executor: "node", address: job, remoteEligible: true, bounds: ["memory"] },
            { requiredLabels: [], requiredBins: [], executor: "node", address: job, remoteEligible: true, bounds: [] }
          )
        },
        {
          weight: 1,
          arbitrary: fc.record({
            requiredLabels: fc.subarray(["gpu=true", "os=linux"]),
            requiredBins: fc.subarray(["ffmpeg"]),
            executor: fc.constantFrom("node", "process"),
            address: fc.constantFrom(job, "other:job@1"),
            remoteEligible: fc.boolean(),
            bounds: fc.subarray(["memory"])
          })
        }
      ),
      preferredLabels: fc.subarray(["zone=eu", "gpu=true"]),
      declinedBy: fc.subarray(["w1", "w2", "w3"]),
      alive: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
      // Why a silent one is silent: it said bye, it lapsed, nothing heard since the owner started, never advertised.
      silence: fc.array(fc.constantFrom(undefined, "ended", "unheard", "never", "hello"), { minLength: 4, maxLength: 4 }),
      used: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 4, maxLength: 4 }),
      logicalFull: fc.boolean(),
      // As a dispatcher does: a host whose view did not change is the very same object again.
      reuse: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
      // The list in another order now and then (hosts joined or left): entries move.
      reversed: fc.boolean()
    })
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("advertise" as const), worker: fc.constantFrom("w1", "w2", "w3"), config: configArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("readvertise-same" as const), worker: fc.constantFrom("w1", "w2", "w3") }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("change-one" as const),
      worker: fc.constantFrom("w1", "w2", "w3"),
      field: fc.constantFrom("labels" as const, "capabilities" as const, "bins" as const, "artifacts" as const, "scope" as const),
      config: configArb
    })
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("revoke" as const), worker: fc.constantFrom("w1", "w2", "w3") }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("rename" as const), worker: fc.constantFrom("w1", "w2", "w3"), name: fc.constantFrom("a", "b") }) }
)

describe("the feasibility cache", () => {
  it("changes nothing: over decisions, advertisements, revocations and renames, place answers the same with and without it", () => {
    const configured = (id: string, c: typeof configArb extends fc.Arbitrary<infer A> ? A : never): Candidate =>
      worker(id, {
        labels: [...c.labels],
        capabilities: [...c.capabilities],
        bins: [...c.bins],
        scope: c.scoped ? ["other:job@1"] : [],
        artifacts: c.held === "no" ? [] : [{ address: job, digest: c.held === "yes" ? "sha256:d1" : "sha256:x" }],
        slots: { capacity: 2, used: 0 }
      })
    fc.assert(
      fc.property(fc.array(configArb, { minLength: 3, maxLength: 3 }), fc.array(stepArb, { maxLength: 40 }), (initial, steps) => {
        const fleet = new Map<string, Candidate>([["owner", { ...owner, slots: { capacity: 2, used: 0 } }]])
        initial.forEach((c, i) => fleet.set(`w${i + 1}`, configured(`w${i + 1}`, c)))
        const cache = makeFeasibilityCache()
        // The object handed over for each host in the last decision, and the configuration it was made from.
        const handed = new Map<string, { readonly from: Candidate; readonly as: Candidate }>()
        steps.forEach((step, n) => {
          const w = step.kind === "decide" ? undefined : fleet.get(step.worker)!
          switch (step.kind) {
            case "advertise":
              return void fleet.set(step.worker, { ...configured(step.worker, step.config), revoked: w!.revoked, name: w!.name })
            case "readvertise-same":
              // The same content in new lists: the cache recomputes (identity), the answer is the same.
              return void fleet.set(step.worker, { ...w!, labels: [...w!.labels], capabilities: [...w!.capabilities], artifacts: [...w!.artifacts] })
            case "change-one":
              // One list of the configuration changes, the others stay the very same values.
              return void fleet.set(step.worker, { ...w!, [step.field]: configured(step.worker, step.config)[step.field] })
            case "revoke":
              return void fleet.set(step.worker, { ...w!, revoked: true })
            case "rename":
              return void fleet.set(step.worker, { ...w!, name: step.name })
            case "decide": {
              const a: Activity = { ...activity, id: `a${n}`, ...step.requirements, preferredLabels: step.preferredLabels, declinedBy: step.declinedBy }
              // The moment: each host's liveness and slots drawn anew, its configuration kept (same lists).
              const cs = [...fleet.values()].map((c, i) => {
                const before = handed.get(c.id)
                if (step.reuse[i] && before !== undefined && before.from === c) return before.as
                const alive = c.isOwner || step.alive[i]!
                const silence = alive ? undefined : step.silence[i]
                const made: Candidate = { ...c, advertisementAlive: alive, ...(silence === undefined ? {} : { silence }), slots: { capacity: 2, used: step.used[i]! } }
                handed.set(c.id, { from: c, as: made })
                return made
              })
              if (step.reversed) cs.reverse()
              const q: Quotas = { logical: step.logicalFull ? { capacity: 1, used: 1 } : null, endpoint: null }
              expect(place(a, cs, q, cache)).toEqual(place(a, cs, q))
            }
          }
        })
      }),
      { numRuns: 1000 }
    )
  })

  it("judges the very same candidate objects anew where the decision differs: preferences, ledgers, declines, order", () => {
    const cache = makeFeasibilityCache()
    const eu = worker("w1", { labels: ["zone=eu"], slots: { capacity: 2, used: 0 } })
    const us = worker("w2", { labels: ["zone=us"], slots: { capacity: 2, used: 0 } })
    const busy = worker("w3", { labels: ["zone=eu"], slots: { capacity: 1, used: 1 } })
    const fleet = [eu, us, busy]
    const decide = (over: Partial<Activity>, q: Quotas = free, cs: ReadonlyArray<Candidate> = fleet) => {
      const withCache = place({ ...activity, ...over }, cs, q, cache)
      expect(withCache).toEqual(place({ ...activity, ...over }, cs, q))
      return withCache
    }
    expect(decide({ id: "x1", preferredLabels: ["zone=eu"] })).toMatchObject({ outcome: "placed", host: "w1" })
    expect(decide({ id: "x2", preferredLabels: ["zone=us"] })).toMatchObject({ outcome: "placed", host: "w2" })
    expect(decide({ id: "x3", preferredLabels: ["zone=us"] }, { logical: { capacity: 1, used: 1 }, endpoint: null })).toMatchObject({ outcome: "waiting" })
    expect(decide({ id: "x4", preferredLabels: ["zone=us"] }, { logical: { capacity: 2, used: 2 }, endpoint: null }).verdicts[2]!.exclusions.map((e) => e.text)).toEqual([
      "logical quota: 2 of 2 in use",
      "slots: 1 of 1 in use"
    ])
    expect(decide({ id: "x5", preferredLabels: ["zone=us"], declinedBy: ["w2"] })).toMatchObject({ outcome: "placed", host: "w1" })
    expect(decide({ id: "x6", preferredLabels: ["zone=eu"], declinedBy: ["w1"] }, free, [busy, us, eu])).toMatchObject({ outcome: "placed", host: "w2" })
    expect(decide({ id: "x7", preferredLabels: ["zone=eu"] }, free, [us, eu])).toMatchObject({ outcome: "placed", host: "w1" })
    // A label listed twice counts twice; past 30 distinct preferred labels they are counted one by one.
    expect(decide({ id: "x8", preferredLabels: ["zone=us", "zone=us", "zone=eu"] }, free, [us, eu]).verdicts[0]!.score).toEqual({ locality: 0, preference: 2 })
    const many = Array.from({ length: 40 }, (_, k) => `k${k}=v`)
    const tagged = worker("w4", { labels: [many[35]!, many[36]!, many[3]!], slots: { capacity: 2, used: 0 } })
    expect(decide({ id: "x9", preferredLabels: many }, free, [us, tagged]).verdicts[1]!.score).toEqual({ locality: 0, preference: 3 })
    expect(decide({ id: "x10", preferredLabels: [many[35]!, "zone=eu"] }, free, [us, tagged]).verdicts[1]!.score).toEqual({ locality: 0, preference: 1 })
  })

  it("counts preferences right past the labels it can give a bit to", () => {
    const cache = makeFeasibilityCache()
    const labels = Array.from({ length: 40 }, (_, k) => `k${k}=v`)
    const fleet = [worker("w1", { labels: [labels[0]!] }), worker("w2", { labels: [labels[33]!] }), worker("w3", { labels })]
    for (const [id, preferredLabels] of [["x1", labels.slice(0, 32)], ["x2", [labels[32]!]], ["x3", [labels[33]!, labels[0]!]], ["x4", labels]] as const) {
      const a = { ...activity, id, preferredLabels }
      expect(place(a, fleet, free, cache)).toEqual(place(a, fleet, free))
    }
    // 40 preferences held: the most preferred host, scored past the cached counts.
    expect(place({ ...activity, id: "x5", preferredLabels: labels }, fleet, free, cache)).toMatchObject({ outcome: "placed", host: "w3" })
  })

  it("reuses a statically excluded candidate's verdict between decisions, and not after the worker advertises again", () => {
    const cache = makeFeasibilityCache()
    const lacking = worker("w1", { labels: ["os=linux"] })
    const a: Activity = { ...activity, requiredLabels: ["gpu=true"] }
    const first = place({ ...a, id: "x1" }, [lacking], free, cache)
    const second = place({ ...a, id: "x2" }, [{ ...lacking, slots: { capacity: 4, used: 1 } }], free, cache)
    expect(second.verdicts[0]).toBe(first.verdicts[0])
    const readvertised = place({ ...a, id: "x3" }, [{ ...lacking, labels: ["gpu=true"] }], free, cache)
    expect(readvertised).toMatchObject({ outcome: "placed", host: "w1" })
  })
})
