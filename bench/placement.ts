/**
 * bench/placement: placement decisions per second with 10, 100 and 10,000 candidates, each
 * decision with its full exclusion records (`place`), beside the same checks without recording,
 * in the same run.
 *
 *   npx vite-node bench/placement.ts [--seconds 0.5] [--rounds 7] [--seed 1] [--only 10000]
 *
 * Inputs: from a seeded PRNG (mulberry32), for each N, fleets of N hosts (the owner and N - 1
 * workers as the registry holds them) and decisions over them: an activity for one of the
 * fleet's six jobs (requires Linux on x64, most also `ffmpeg`; a few preferred labels; an
 * earlier attempt or two declined by some worker) and each host's view at that moment (slots in
 * use drawn anew, about a third full). The owner runs macOS on arm64, so it is excluded and the
 * choice is among workers. Workers carry a realistic mix of faults: revoked, advertisement
 * expired, out of scope, job not held or held with an older digest, no `node` executor, missing
 * label or program, declined; about 5 labels, 4 programs and 4 artifacts each. About 25-30% of
 * candidates pass eligibility, about 20% have room; 3% of decisions find the logical quota
 * exhausted (they wait).
 * Measured ("recorded"): `place(activity, candidates, quotas)` from src/domain/placement: an
 * Outcome with a verdict and the exclusion records (code, text, numbers) for every candidate.
 * Measured too ("cached"): the same with the feasibility cache the dispatcher places with, over
 * lists made as the dispatcher makes them: one decision after another over the same fleet, a
 * host whose view did not change being the very same object, while between two decisions
 * --churn (default 0.1%) of the workers advertise again (the same content in new lists, so the
 * cache must judge them anew) and --slot-churn (default 1%) of the hosts have other slots in
 * use. Both are far above what a fleet does: at 1,000 decisions/s, 0.1% of 10,000 workers is
 * every worker changing its advertisement once a second (workers advertise anew when a bag
 * or label changes); 1% is 100 hosts whose slots change between two decisions (a placement
 * and a report change one each). With 10 and 100 candidates the inputs are 200 and 40
 * different fleets, 10 decisions each, so the cache is mostly filling there: that row shows
 * what its misses cost, not what a dispatcher with one fleet sees.
 * Baseline ("bare"): `decideBare` below: the same predicates in the same order, the same
 * `preference` and `tieBreak`, but no exclusion objects or text: it keeps the best host in one
 * pass and counts the eligible and with-room candidates. Before timing, every generated decision
 * is checked to come out the same both ways (outcome, host, both counts).
 * Method: one N at a time (its inputs made, then dropped before the next); warm-up, then
 * rounds; in each round each workload runs for a fixed wall time, the order flipped every
 * round, a full GC before each (the garbage of one is not collected on the other's time);
 * rates are medians over rounds, per second of wall time and of process CPU time. Afterwards
 * the parts of `place` are timed apart: the layers with their records, and the ranking. The
 * JSON size of one outcome (what a decision journals) is printed too.
 * Targets: >= 1,000 decisions/s at 10,000 candidates with full records (judged on the cached
 * workload: the dispatcher's); recording costs at most 2 x (recorded >= 0.5 x bare, both
 * without cache) at every N. Prints PASS/FAIL, exits 1 on any FAIL.
 */
import { performance } from "node:perf_hooks"
import v8 from "node:v8"
import vm from "node:vm"
import {
  BOUNDS_CAPABILITY,
  capacityOf,
  eligibilityOf,
  place,
  preference,
  tieBreak,
  type Activity,
  type Candidate,
  type CandidateVerdict,
  type Outcome,
  type Quotas
} from "../src/domain/placement/Placement.js"
import { makeFeasibilityCache } from "../src/domain/placement/Feasibility.js"
import { prng } from "./prng.js"
import { arg, fmt, median, printMachine } from "./support.js"

const SECONDS = arg("seconds", 0.5)
const ROUNDS = arg("rounds", 7)
const SEED = arg("seed", 1)
const ONLY = arg("only", 0)
const SIZES = [10, 100, 10_000].filter((n) => ONLY === 0 || n === ONLY)
/** Decisions generated per N: enough distinct inputs that no single one is what gets timed. */
const DECISIONS: Record<number, { readonly count: number; readonly perFleet: number }> = {
  10: { count: 2_000, perFleet: 10 },
  100: { count: 400, perFleet: 10 },
  10_000: { count: 16, perFleet: 16 }
}
const TARGET_RATE = 1_000
const CHURN = arg("churn", 0.001)
const SLOT_CHURN = arg("slot-churn", 0.01)
const TARGET_RATIO = 0.5

// ---------------------------------------------------------------------------------------------
// Inputs

interface Decision {
  readonly activity: Activity
  readonly candidates: ReadonlyArray<Candidate>
  readonly quotas: Quotas
  /** The fleet the candidates are of (its number). */
  readonly fleet: number
  /** For the cached workload: the hosts whose view changed since the previous decision (see `churn`). */
  readonly changes: ReadonlyArray<Change>
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const BAGS = ["reports", "backup", "crawler", "mail", "index", "thumbs", "hasher"]
const JOBS = ["nightly", "hourly", "sync", "render", "digest", "checksum"]
const OTHER_LABELS = ["tier=batch", "tier=interactive", "team=data", "team=web", "rack=a", "rack=b", "rack=c"]
const OTHER_BINS = ["git", "python3", "rsync", "tar", "jq", "convert"]
const PREFERRED = ["zone=eu", "disk=ssd", "gpu=true", "tier=batch"]

/** The hosts an owner places on: the owner and n - 1 workers, as the registry holds them. */
interface Fleet {
  readonly jobs: ReadonlyArray<{ readonly address: string; readonly digest: string }>
  readonly hosts: ReadonlyArray<Candidate>
}

const generateFleet = (n: number, rnd: () => number): Fleet => {
  const chance = (p: number) => rnd() < p
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1))
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(rnd() * xs.length)]!
  const some = <A>(xs: ReadonlyArray<A>, p: number): Array<A> => xs.filter(() => chance(p))
  const id = () => `w${Array.from({ length: 10 }, () => BASE62[Math.floor(rnd() * 62)]).join("")}`
  const digest = () => `sha256:${Array.from({ length: 64 }, () => "0123456789abcdef"[Math.floor(rnd() * 16)]).join("")}`
  // The owner's catalog: six published jobs; workers hold some of them.
  const jobs = Array.from({ length: 6 }, (_, i) => ({ address: `${BAGS[i]}:${pick(JOBS)}@${int(1, 3)}.${int(0, 9)}.${int(0, 9)}`, digest: digest() }))
  const hosts: Array<Candidate> = [
    {
      // The owner runs macOS on arm64: jobs that need Linux on x64 go to workers.
      id: "owner",
      name: "owner",
      isOwner: true,
      revoked: false,
      advertisementAlive: true,
      scope: [],
      labels: ["os=darwin", "arch=arm64", "zone=eu", "disk=ssd"],
      capabilities: ["node", "process", "action"],
      bins: ["git", "ffmpeg", "rsync"],
      artifacts: jobs,
      slots: { capacity: 4, used: 0 }
    }
  ]
  for (let i = 1; i < n; i++) {
    // Each catalog job held with the published digest (60%) or an older one (5%).
    const artifacts = jobs.flatMap((j) => {
      const r = rnd()
      return r < 0.6 ? [j] : r < 0.65 ? [{ address: j.address, digest: digest() }] : []
    })
    hosts.push({
      id: id(),
      name: `box-${i}`,
      isOwner: false,
      revoked: chance(0.03),
      advertisementAlive: !chance(0.06),
      // A quarter are scoped to one to three of the jobs.
      scope: chance(0.25) ? some(jobs, 0.4).map((j) => j.address).concat(pick(jobs).address) : [],
      labels: [
        chance(0.85) ? "os=linux" : "os=darwin",
        chance(0.85) ? "arch=x64" : "arch=arm64",
        chance(0.4) ? "zone=eu" : "zone=us",
        ...(chance(0.5) ? ["disk=ssd"] : chance(0.5) ? ["disk=hdd"] : []),
        ...(chance(0.2) ? ["gpu=true"] : []),
        ...some(OTHER_LABELS, 0.2)
      ],
      capabilities: chance(0.03) ? ["process"] : chance(0.5) ? ["node", "process"] : ["node", "process", "action"],
      bins: [...some(OTHER_BINS, 0.5), ...(chance(0.85) ? ["ffmpeg"] : [])],
      artifacts,
      slots: { capacity: pick([1, 2, 4, 8, 16]), used: 0 }
    })
  }
  return { jobs, hosts }
}

/**
 * `count` decisions over fleets of n hosts, `perFleet` decisions per fleet: each an activity for
 * one of the fleet's jobs, and the hosts' views at that moment (slots in use drawn anew: about a
 * third full).
 */
const generate = (n: number, count: number, perFleet: number, rnd: () => number): ReadonlyArray<Decision> => {
  const chance = (p: number) => rnd() < p
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1))
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(rnd() * xs.length)]!
  const decisions: Array<Decision> = []
  let fleet = generateFleet(n, rnd)
  for (let d = 0; d < count; d++) {
    if (d > 0 && d % perFleet === 0) fleet = generateFleet(n, rnd)
    const job = pick(fleet.jobs)
    const candidates = fleet.hosts.map((h): Candidate => {
      const used = chance(0.33) ? h.slots.capacity : int(0, h.slots.capacity - 1)
      return { ...h, slots: { capacity: h.slots.capacity, used } }
    })
    const activity: Activity = {
      id: `act-${d.toString(36)}-${Math.floor(rnd() * 2 ** 32).toString(36)}`,
      address: job.address,
      digest: job.digest,
      executor: "node",
      remoteEligible: true,
      // Linux on x64 (the owner has neither), most also a program; preferences from a pool.
      requiredLabels: ["os=linux", "arch=x64"],
      requiredBins: chance(0.7) ? ["ffmpeg"] : [],
      preferredLabels: PREFERRED.filter(() => chance(0.4)),
      bounds: [],
      // An earlier attempt or two declined by hosts of the fleet.
      declinedBy: n > 1 ? Array.from({ length: int(0, 2) }, () => candidates[int(1, n - 1)]!.id) : []
    }
    // The logical quota reserved at admission: exhausted in 3% of decisions (all wait).
    const quotaCapacity = 64
    const quotas: Quotas = {
      logical: { capacity: quotaCapacity, used: chance(0.03) ? quotaCapacity : int(0, quotaCapacity - 1) },
      endpoint: null
    }
    decisions.push({ activity, candidates, quotas, fleet: Math.floor(d / perFleet), changes: [] })
  }
  return decisions
}

/** A host whose view changed since the previous decision: other slots in use, or an advertisement again. */
interface Change {
  readonly index: number
  readonly readvertised: boolean
  readonly slots: Candidate["slots"]
}

/**
 * The cached workload's changes: its lists are made as the dispatcher makes them
 * (src/app/runs/Candidates.ts), one decision after another over the same fleet, a host whose
 * view did not change since the previous decision being the very same object. Between two
 * decisions CHURN of the workers advertise again (the same content in new lists, so the
 * feasibility cache must recompute them: it knows a configuration by the identity of its
 * lists) and SLOT_CHURN of the hosts have other slots in use (the slots drawn for this
 * decision). Drawn from its own stream, after the inputs.
 */
const churn = (decisions: ReadonlyArray<Decision>, rnd: () => number): ReadonlyArray<Decision> =>
  decisions.map((d) => ({
    ...d,
    changes: d.candidates.flatMap((c, index): Array<Change> => {
      const readvertised = !c.isOwner && rnd() < CHURN
      return readvertised || rnd() < SLOT_CHURN ? [{ index, readvertised, slots: c.slots }] : []
    })
  }))

/** The cached workload's list now, and the fleet it is of. */
let listNow: { fleet: number; list: ReadonlyArray<Candidate> } = { fleet: -1, list: [] }

/**
 * The list for decision `d`, from the one before it: a new fleet's hosts as generated, else the
 * previous list with `d`'s changes (new objects; a re-advertisement with new lists). The
 * changes are applied in the timed loop: a few hundred objects, what a dispatcher makes too.
 */
const advance = (d: Decision): ReadonlyArray<Candidate> => {
  if (listNow.fleet !== d.fleet) {
    listNow = { fleet: d.fleet, list: d.candidates }
    return d.candidates
  }
  const list = listNow.list.slice()
  for (const change of d.changes) {
    const c = list[change.index]!
    const again = change.readvertised
    // One object literal, in the fields' order, as the dispatcher makes candidates: objects of
    // other shapes (spread copies) made V8's code for `place` without the cache slower too.
    list[change.index] = {
      id: c.id,
      name: c.name,
      isOwner: c.isOwner,
      revoked: c.revoked,
      advertisementAlive: c.advertisementAlive,
      scope: again ? [...c.scope] : c.scope,
      labels: again ? [...c.labels] : c.labels,
      capabilities: again ? [...c.capabilities] : c.capabilities,
      bins: again ? [...c.bins] : c.bins,
      artifacts: again ? [...c.artifacts] : c.artifacts,
      slots: change.slots
    }
  }
  listNow.list = list
  return list
}

// ---------------------------------------------------------------------------------------------
// Baseline: the same checks without recording

interface Bare {
  readonly outcome: "placed" | "blocked" | "waiting"
  readonly host: string | null
  readonly eligible: number
  readonly withRoom: number
}

/**
 * The predicates of `eligibility`, `capacity` and `preference` in the same order, each one
 * evaluated as `place` evaluates it (every eligibility predicate, not only up to the first
 * failure), counting failures instead of building exclusions; then the best host by the same
 * order as `place`'s sort (locality, preference, tie-break, id), kept in one pass.
 */
const decideBare = (a: Activity, candidates: ReadonlyArray<Candidate>, q: Quotas): Bare => {
  let eligible = 0
  let withRoom = 0
  let best: Candidate | null = null
  let bestLocality = 0
  let bestPreference = 0
  let bestTie = 0
  for (const c of candidates) {
    let faults = 0
    if (!c.isOwner) {
      if (c.revoked) faults++
      else if (!c.advertisementAlive) faults++
      if (!a.remoteEligible) faults++
      if (c.scope.length > 0 && !c.scope.includes(a.address)) faults++
      const held = c.artifacts.find((x) => x.address === a.address)
      if (held === undefined) faults++
      else if (held.digest !== a.digest) faults++
    }
    if (!c.capabilities.includes(a.executor)) faults++
    for (const label of a.requiredLabels) if (!c.labels.includes(label)) faults++
    for (const bin of a.requiredBins) if (!c.bins.includes(bin)) faults++
    if (a.bounds.length > 0 && !c.capabilities.includes(BOUNDS_CAPABILITY)) faults++
    if (a.declinedBy.includes(c.id)) faults++
    if (faults > 0) continue
    eligible++
    let full = 0
    if (q.logical !== null && q.logical.used + 1 > q.logical.capacity) full++
    if (c.slots.used + 1 > c.slots.capacity) full++
    if (q.endpoint !== null && q.endpoint.used + 1 > q.endpoint.capacity) full++
    if (full > 0) continue
    withRoom++
    const score = preference(c, a)
    if (best === null) {
      best = c
      bestLocality = score.locality
      bestPreference = score.preference
      bestTie = -1
      continue
    }
    // > 0: this candidate comes before the best so far in `place`'s order.
    let order = score.locality - bestLocality || score.preference - bestPreference
    let tie = -1
    if (order === 0) {
      if (bestTie < 0) bestTie = tieBreak(a.id, best.id)
      tie = tieBreak(a.id, c.id)
      order = bestTie - tie || (c.id < best.id ? 1 : -1)
    }
    if (order > 0) {
      best = c
      bestLocality = score.locality
      bestPreference = score.preference
      bestTie = tie
    }
  }
  if (best === null) return { outcome: eligible > 0 ? "waiting" : "blocked", host: null, eligible, withRoom }
  return { outcome: "placed", host: best.id, eligible, withRoom }
}

// ---------------------------------------------------------------------------------------------
// Timing

// A full GC between timed phases without needing `node --expose-gc` (vite-node runs the script).
v8.setFlagsFromString("--expose-gc")
const gc = vm.runInNewContext("gc") as () => void

let sink = 0

const runRecorded = (decisions: ReadonlyArray<Decision>, i: number): void => {
  const d = decisions[i]!
  const o = place(d.activity, d.candidates, d.quotas)
  sink += o.verdicts.length + (o.outcome === "placed" ? o.host.length : 0)
}

let cache = makeFeasibilityCache()
const runCached = (decisions: ReadonlyArray<Decision>, i: number): void => {
  const d = decisions[i]!
  const o = place(d.activity, advance(d), d.quotas, cache)
  sink += o.verdicts.length + (o.outcome === "placed" ? o.host.length : 0)
}

const runBare = (decisions: ReadonlyArray<Decision>, i: number): void => {
  const d = decisions[i]!
  const o = decideBare(d.activity, d.candidates, d.quotas)
  sink += o.withRoom + (o.host === null ? 0 : o.host.length)
}

interface Rate {
  /** Decisions per second of wall time. */
  readonly wall: number
  /** Decisions per second of the process's CPU time (all threads: GC helpers count). */
  readonly cpu: number
}

/** Decisions per second over at least `seconds` of wall time, cycling through the inputs. */
const rate = (decisions: ReadonlyArray<Decision>, run: (ds: ReadonlyArray<Decision>, i: number) => void, seconds: number): Rate => {
  const budget = seconds * 1000
  const cpuStarted = process.cpuUsage()
  const started = performance.now()
  let done = 0
  let elapsed = 0
  let i = 0
  // Check the clock every few decisions: often enough for 10,000 candidates, cheap enough for 10.
  const every = Math.max(1, Math.floor(2_000 / decisions[0]!.candidates.length))
  while (elapsed < budget) {
    for (let k = 0; k < every; k++) {
      run(decisions, i)
      i = i + 1 === decisions.length ? 0 : i + 1
    }
    done += every
    elapsed = performance.now() - started
  }
  const cpu = process.cpuUsage(cpuStarted)
  return { wall: (done / elapsed) * 1000, cpu: (done / (cpu.user + cpu.system)) * 1e6 }
}

// ---------------------------------------------------------------------------------------------
// The parts of `place`, timed apart, to see where the time goes

/** `place`'s loop over the three layers, with the same records (shared per decision, as `place` makes them), but no ranking. */
const layersOnly = (a: Activity, candidates: ReadonlyArray<Candidate>, q: Quotas): number => {
  const eligible = eligibilityOf(a)
  const room = capacityOf(q)
  const verdicts: Array<CandidateVerdict> = []
  for (const c of candidates) {
    const layer1 = eligible(c)
    if (layer1.length > 0) {
      verdicts.push({ candidate: c.id, name: c.name, exclusions: layer1, score: null })
      continue
    }
    const layer2 = room(c)
    if (layer2.length > 0) {
      verdicts.push({ candidate: c.id, name: c.name, exclusions: layer2, score: null })
      continue
    }
    verdicts.push({ candidate: c.id, name: c.name, exclusions: [], score: preference(c, a) })
  }
  return verdicts.length
}

interface Ranked {
  readonly c: Candidate
  readonly score: { readonly locality: number; readonly preference: number }
}

/** A sort of the candidates with room by `place`'s order (here on a copy of the list): what ranking cost before `place` kept the best host in one pass; for comparison. */
const rankOnly = (a: Activity, ranked: ReadonlyArray<Ranked>): string | undefined =>
  ranked
    .slice()
    .sort(
      (x, y) =>
        y.score.locality - x.score.locality ||
        y.score.preference - x.score.preference ||
        tieBreak(a.id, x.c.id) - tieBreak(a.id, y.c.id) ||
        (x.c.id < y.c.id ? -1 : 1)
    )[0]?.c.id

const PHASE_PASSES = 3
const PHASE_SECONDS = 0.2

/** Microseconds per decision of each part: the median of PHASE_PASSES interleaved passes. */
const phases = (decisions: ReadonlyArray<Decision>): ReadonlyArray<readonly [string, number]> => {
  const ranked = decisions.map((d) =>
    place(d.activity, d.candidates, d.quotas).verdicts.flatMap((v, i): Array<Ranked> => (v.score === null ? [] : [{ c: d.candidates[i]!, score: v.score }]))
  )
  const parts: ReadonlyArray<readonly [string, (ds: ReadonlyArray<Decision>, i: number) => void]> = [
    ["bare: the same checks, no records, best host in one pass (baseline)", runBare],
    ["the three layers with their records, no ranking", (ds, i) => (sink += layersOnly(ds[i]!.activity, ds[i]!.candidates, ds[i]!.quotas))],
    ["a sort of the candidates with room (place now ranks in its one pass)", (ds, i) => (sink += rankOnly(ds[i]!.activity, ranked[i]!)?.length ?? 0)],
    ["place (records and ranking)", runRecorded]
  ]
  const times = parts.map((): Array<number> => [])
  for (let pass = 0; pass < PHASE_PASSES; pass++) {
    parts.forEach(([, run], k) => {
      gc()
      times[k]!.push(1e6 / rate(decisions, run, PHASE_SECONDS).wall)
    })
  }
  return parts.map(([label], k) => [label, median(times[k]!)] as const)
}

// ---------------------------------------------------------------------------------------------

/** Generates the decisions for N, checks the baseline against `place` on each, prints what they are. */
const prepare = (n: number): ReadonlyArray<Decision> => {
  const generatedAt = performance.now()
  // Each N from its own stream, so --only N measures the same inputs as a full run.
  const decisions = churn(generate(n, DECISIONS[n]!.count, DECISIONS[n]!.perFleet, prng(SEED * 1_000_003 + n)), prng(SEED * 1_000_003 + n + 7))
  cache = makeFeasibilityCache()
  listNow = { fleet: -1, list: [] }
  const generateMs = performance.now() - generatedAt
  // The baseline is honest only if it decides the same: check every generated decision.
  const outcomes = { placed: 0, waiting: 0, blocked: 0 }
  let eligible = 0
  let withRoom = 0
  let exclusions = 0
  for (const d of decisions) {
    const recorded = place(d.activity, d.candidates, d.quotas)
    const bare = decideBare(d.activity, d.candidates, d.quotas)
    const host = recorded.outcome === "placed" ? recorded.host : null
    const recEligible = recorded.verdicts.filter((v) => v.exclusions.length === 0 || v.exclusions[0]!.layer === "capacity").length
    const recRoom = recorded.verdicts.filter((v) => v.score !== null).length
    if (recorded.outcome !== bare.outcome || host !== bare.host || recEligible !== bare.eligible || recRoom !== bare.withRoom) {
      throw new Error(
        `baseline disagrees with place on ${d.activity.id} (N = ${n}): ${recorded.outcome} ${host} ${recEligible}/${recRoom} vs ${bare.outcome} ${bare.host} ${bare.eligible}/${bare.withRoom}`
      )
    }
    if (host === "owner") throw new Error(`the owner was chosen for ${d.activity.id}: the inputs should exclude it`)
    // The cached workload's list for this decision, twice round with the cache: once filling it, once using it.
    const list = advance(d)
    const uncached = JSON.stringify(place(d.activity, list, d.quotas))
    for (let k = 0; k < 2; k++) {
      if (JSON.stringify(place(d.activity, list, d.quotas, cache)) !== uncached) throw new Error(`the feasibility cache changed the outcome of ${d.activity.id} (N = ${n})`)
    }
    outcomes[recorded.outcome]++
    eligible += bare.eligible
    withRoom += bare.withRoom
    exclusions += recorded.verdicts.reduce((s, v) => s + v.exclusions.length, 0)
  }
  const candidates = decisions.length * n
  console.log(
    `\n  N = ${fmt(n)}: ${fmt(decisions.length)} decisions (${decisions.length / DECISIONS[n]!.perFleet} fleets of ${fmt(n)} hosts, generated in ${fmt(generateMs)} ms): ` +
      `${outcomes.placed} placed, ${outcomes.waiting} waiting, ${outcomes.blocked} blocked; ` +
      `${((eligible / candidates) * 100).toFixed(1)}% of candidates eligible, ${((withRoom / candidates) * 100).toFixed(1)}% with room; ` +
      `${(exclusions / candidates).toFixed(2)} exclusions per candidate. Baseline and place agree on outcome, host and counts for every decision; place with the feasibility cache answers every decision as without it.`
  )
  return decisions
}

/** What gets journaled: the JSON of one decision. */
const journaled = (d: Decision, n: number): void => {
  const one: Outcome = place(d.activity, d.candidates, d.quotas)
  const bytes = Buffer.byteLength(JSON.stringify(one))
  const stringifyMs = median(
    Array.from({ length: 5 }, () => {
      const t = performance.now()
      sink += JSON.stringify(one).length
      return performance.now() - t
    })
  )
  console.log(
    `  journaled: one outcome (${one.outcome}) as JSON: ${fmt(bytes)} bytes (${(bytes / 1024).toFixed(0)} KiB, ${fmt(bytes / n)} B per candidate), ` +
      `JSON.stringify in ${stringifyMs.toFixed(stringifyMs < 1 ? 3 : 1)} ms`
  )
}

interface Result {
  readonly n: number
  readonly recorded: number
  readonly cached: number
  readonly bare: number
  readonly recordedCpu: number
  readonly cachedCpu: number
  readonly bareCpu: number
  readonly paired: number
}

const measure = (n: number, decisions: ReadonlyArray<Decision>): Result => {
  // Warm-up (the cached workload's also fills the cache, as a running dispatcher's is).
  rate(decisions, runRecorded, 0.3)
  rate(decisions, runCached, 0.3)
  rate(decisions, runBare, 0.3)
  console.log(`  ${ROUNDS} rounds, ${SECONDS} s per workload per round, full GC before each; decisions per second of wall time (of CPU time)`)
  console.log(`  round         recorded (decisions/s)   recorded, cached (${(CHURN * 100).toFixed(1)}% churn)         bare (decisions/s)   recorded/bare (CPU)`)
  const cell = (r: Rate, width: number) => `${fmt(r.wall)} (${fmt(r.cpu)})`.padStart(width)
  const recRates: Array<Rate> = []
  const cachedRates: Array<Rate> = []
  const bareRates: Array<Rate> = []
  const workloads = [
    () => recRates.push(rate(decisions, runRecorded, SECONDS)),
    () => cachedRates.push(rate(decisions, runCached, SECONDS)),
    () => bareRates.push(rate(decisions, runBare, SECONDS))
  ]
  for (let r = 0; r < ROUNDS; r++) {
    // The order rotates every round, each workload after a full GC.
    for (let k = 0; k < workloads.length; k++) {
      gc()
      workloads[(r + k) % workloads.length]!()
    }
    const rr = recRates[r]!
    const cr = cachedRates[r]!
    const br = bareRates[r]!
    console.log(`  ${String(r + 1).padEnd(7)} ${cell(rr, 30)}   ${cell(cr, 30)}   ${cell(br, 24)}   ${(rr.wall / br.wall).toFixed(2).padStart(13)} (${(rr.cpu / br.cpu).toFixed(2)})`)
  }
  const result: Result = {
    n,
    recorded: median(recRates.map((x) => x.wall)),
    cached: median(cachedRates.map((x) => x.wall)),
    bare: median(bareRates.map((x) => x.wall)),
    recordedCpu: median(recRates.map((x) => x.cpu)),
    cachedCpu: median(cachedRates.map((x) => x.cpu)),
    bareCpu: median(bareRates.map((x) => x.cpu)),
    paired: median(recRates.map((x, i) => x.wall / bareRates[i]!.wall))
  }
  console.log(
    `  median  ${cell({ wall: result.recorded, cpu: result.recordedCpu }, 30)}   ${cell({ wall: result.cached, cpu: result.cachedCpu }, 30)}   ${cell({ wall: result.bare, cpu: result.bareCpu }, 24)}   ` +
      `${(result.recorded / result.bare).toFixed(2).padStart(13)} (${(result.recordedCpu / result.bareCpu).toFixed(2)})   median of per-round ratios ${result.paired.toFixed(2)}`
  )
  console.log(`  where the time goes (us per decision, median of ${PHASE_PASSES} interleaved passes of ${PHASE_SECONDS} s)`)
  const parts = phases(decisions)
  const total = parts[parts.length - 1]![1]
  for (const [label, us] of parts) {
    console.log(`    ${label.padEnd(70)} ${us.toFixed(us < 100 ? 2 : 0).padStart(9)} us  ${((us / total) * 100).toFixed(0).padStart(4)}%`)
  }
  return result
}

const main = (): void => {
  printMachine("bench/placement")
  const results: Array<Result> = []
  for (const n of SIZES) {
    // One N at a time: its inputs are dropped before the next is made, so one size's heap does not weigh on another's GC.
    gc()
    const decisions = prepare(n)
    journaled(decisions[0]!, n)
    results.push(measure(n, decisions))
  }

  console.log("\n  result (medians; wall time)")
  console.log("  N        recorded (decisions/s)   cached (decisions/s)   bare (decisions/s)   recorded/bare   cost (bare/recorded)   recording <= 2 x   cached/bare")
  let ok = true
  for (const r of results) {
    const ratio = r.recorded / r.bare
    const pass = ratio >= TARGET_RATIO
    ok &&= pass
    console.log(
      `  ${fmt(r.n).padEnd(7)}  ${fmt(r.recorded).padStart(22)}   ${fmt(r.cached).padStart(20)}   ${fmt(r.bare).padStart(18)}   ${ratio.toFixed(2).padStart(13)}   ${(1 / ratio).toFixed(2).padStart(18)} x   ${(pass ? "PASS" : "FAIL").padStart(16)}   ${(r.cached / r.bare).toFixed(2).padStart(11)}`
    )
  }
  const at10k = results.find((r) => r.n === 10_000)
  if (at10k !== undefined) {
    // The dispatcher places with its feasibility cache: the rate target is judged on that workload.
    const rateOk = at10k.cached >= TARGET_RATE
    ok &&= rateOk
    console.log(
      `  recorded at 10,000 candidates, with the feasibility cache (${(CHURN * 100).toFixed(1)}% of workers re-advertising and ${(SLOT_CHURN * 100).toFixed(1)}% of hosts' slots changing between decisions): ${fmt(at10k.cached)} decisions/s ` +
        `(without it ${fmt(at10k.recorded)}); target >= ${fmt(TARGET_RATE)}: ${rateOk ? "PASS" : "FAIL"}`
    )
  }
  if (sink === -1) console.log("unreachable")
  process.exitCode = ok ? 0 : 1
}

main()
