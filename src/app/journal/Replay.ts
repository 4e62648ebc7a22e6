/**
 * `svc journal replay`: rebuild every projection from an empty state and compare it with the
 * latest projection checkpoint (and, where an owner is running, with what it reports).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { canonicalState, folder, initialState, STATE_PARTS, type OwnerState } from "../../domain/journal/OwnerState.js"
import type { CanonicalState } from "../../domain/journal/Snapshot.js"
import { auditPlacement } from "../../domain/runs/AuditPlacement.js"
import { Checkpoints, type Checkpoint } from "./Checkpoints.js"
import { Hashing } from "./Hashing.js"
import { Journal } from "./Journal.js"
import { jsonInTurns } from "./JsonInTurns.js"

/**
 * Events per page read while folding. Small, so that the events of a page and what is made from
 * them die young: a page is alive (whole) until folded, and a scavenge in the middle of it copies,
 * then promotes, all of it. 1,000 events of 7 KB decisions (bench/journal-replay --corpus runs)
 * made the fold spend a quarter of its time collecting, and 100 made it 1.5 x faster; a page
 * costs one SQLite query, which 100 events amortize.
 */
export const PAGE = 100

export interface Divergence {
  /** `journal`: the journal itself is not whole (sequences missing). */
  readonly against: "checkpoint" | "owner" | "journal"
  readonly sequence: number
  readonly message: string
}

export interface ReplayReport {
  readonly events: number
  readonly head: number
  readonly seconds: number
  readonly eventsPerSecond: number
  /**
   * `matches` null: not compared, since the checkpoint digests an earlier form of the projections
   * (`PROJECTION_FORM`, form "earlier") or a later one (a newer svc wrote it, form "later"), or
   * projections folded keeping another number of settled runs than this replay (form
   * "retention", `retained` the checkpoint's). A digest of no form svc writes (edited, damaged)
   * is form "unknown", `matches` false, and a divergence.
   */
  readonly checkpoint: (Checkpoint & { readonly matches: boolean | null; readonly form?: "earlier" | "later" | "unknown" | "retention"; readonly retained?: number }) | null
  /** Settled runs per generation this replay kept (docs/runs.md, "Runs kept in memory"). */
  readonly retained: number
  readonly owner: { readonly compared: false; readonly reason: string } | { readonly compared: true; readonly matches: boolean }
  readonly divergences: ReadonlyArray<Divergence>
}

export interface PlacementAuditReport {
  readonly decisions: number
  readonly reproduced: number
  readonly diverged: ReadonlyArray<{ readonly sequence: number; readonly runId: string; readonly differences: ReadonlyArray<string> }>
}

/** Every recorded placement decision, re-run from its recorded inputs through the current code. */
export const auditPlacements = Effect.gen(function* () {
  const journal = yield* Journal
  let after = 0
  let decisions = 0
  const diverged: Array<PlacementAuditReport["diverged"][number]> = []
  for (;;) {
    const page = yield* journal.read(after, PAGE)
    if (page.length === 0) break
    for (const envelope of page) {
      if (envelope.event._tag !== "PlacementDecided") continue
      decisions++
      const audit = auditPlacement(envelope.event)
      if (!audit.reproduced) diverged.push({ sequence: envelope.sequence, runId: envelope.event.runId, differences: audit.differences })
    }
    after = page[page.length - 1]!.sequence
  }
  return { decisions, reproduced: decisions - diverged.length, diverged } satisfies PlacementAuditReport
})

/**
 * The form of the projections a checkpoint digests, written before the digest: a checkpoint of
 * another form (an earlier svc kept other fields) cannot be compared, and is reported so, not
 * as a divergence. Bumped whenever `canonicalState` changes shape or content. 6: a run's
 * explanation names revoked identities after the other candidates (Placement.ts, `explainTable`);
 * 5: a reported
 * attempt keeps whether its job succeeded (`ok`; a run stopped before its report came said
 * nothing of it), and a run's decision key holds its exclusions' texts (Runs.ts, `placementKey`);
 * 4: a run's
 * explanation names a worker with its id when another candidate has the same name (fifteenth
 * session); 3: settled runs are kept in
 * two generations and then forgotten (docs/runs.md, "Runs kept in memory"); 2: a run's placement
 * keeps a hashed key and a bounded explanation (sixth session); 1 (no prefix): the first form.
 */
export const PROJECTION_FORM = "p6"

/**
 * The form a checkpoint's digest says it is of: `pN:<64 hex>` is form N, a bare 64-hex digest
 * form 1; anything else no svc wrote (undefined).
 */
export const digestForm = (digest: string): number | undefined => {
  const m = /^(?:p([1-9]\d{0,5}):)?[0-9a-f]{64}$/.exec(digest)
  return m === null ? undefined : m[1] === undefined ? 1 : Number(m[1])
}
const CURRENT_FORM = digestForm(`${PROJECTION_FORM}:${"0".repeat(64)}`)!

/** The digest of a canonical JSON text, with the form's prefix. */
export const digestOfText = (hashing: Pick<Hashing["Type"], "sha256Hex">, text: string) => `${PROJECTION_FORM}:${hashing.sha256Hex(text)}`

const digestOf = (hashing: Hashing["Type"], state: OwnerState) => digestOfText(hashing, JSON.stringify(canonicalState(state)))

/**
 * The projections' canonical JSON and its digest: what a checkpoint writes, text and all (a
 * snapshot). Made and hashed in pieces, giving the event loop turns (JsonInTurns.ts): with
 * thousands of runs kept the text is megabytes (10.7 MiB for 9,000 runs), and made at once it
 * held the owner's thread about 100 ms every checkpoint. The state is an immutable value, so
 * the text is of the state at its sequence whatever commits meanwhile.
 */
export const snapshotOf = (state: OwnerState) =>
  Effect.gen(function* () {
    const hash = (yield* Hashing).sha256()
    const text = yield* jsonInTurns(canonicalState(state), hash.update)
    return { text, digest: `${PROJECTION_FORM}:${hash.hex()}` }
  })

/** Sequences missing from a journal: `from` to `to`, both included. */
export interface SequenceGap {
  readonly from: number
  readonly to: number
}

/** `events 250-252 are missing` / `event 7 is missing`. */
export const gapText = (g: SequenceGap): string => (g.from === g.to ? `event ${g.from} is missing` : `events ${g.from}-${g.to} are missing`)

/**
 * Folds the whole journal; `at` is called with the state after each sequence it names. One
 * `folder` takes every page, so the fold works on plain maps throughout and builds the
 * persistent state once at the end (and at each hook). Sequences run 1, 2, 3, ... without gaps
 * (journal.md): a row deleted from the middle is a gap, answered in `gaps` (a fold cannot see
 * one at the end; a checkpoint past the end says that).
 */
export const foldJournal = (at: ReadonlyMap<number, (state: OwnerState) => Effect.Effect<void>> = new Map(), from: OwnerState = initialState) =>
  Effect.gen(function* () {
    const journal = yield* Journal
    const folding = folder(from)
    let events = 0
    const gaps: Array<SequenceGap> = []
    let expected = from.sequence + 1
    const first = at.get(0)
    if (first !== undefined) yield* first(from)
    for (;;) {
      const page = yield* journal.read(folding.sequence, PAGE)
      if (page.length === 0) break
      for (const envelope of page) {
        if (envelope.sequence !== expected) gaps.push({ from: expected, to: envelope.sequence - 1 })
        expected = envelope.sequence + 1
      }
      if (at.size === 0) for (const envelope of page) folding.add(envelope)
      else {
        for (const envelope of page) {
          folding.add(envelope)
          const hook = at.get(envelope.sequence)
          if (hook !== undefined) yield* hook(folding.state())
        }
      }
      events += page.length
    }
    return { state: folding.state(), events, gaps }
  })

/** A running owner's projections, as canonical JSON (what its admin API reports). */
export interface LiveOwnerState {
  readonly sequence: number
  readonly state: unknown
}

/** The parts (workers, invites, audit, ledger) in which two canonical states differ. */
export const differingCanonicalParts = (a: unknown, b: unknown): Array<string> => {
  const pa = (a ?? {}) as Record<string, unknown>
  const pb = (b ?? {}) as Record<string, unknown>
  return STATE_PARTS.filter((k) => JSON.stringify(pa[k]) !== JSON.stringify(pb[k]))
}

/** The parts in which two states differ. */
export const differingParts = (a: OwnerState, b: OwnerState): Array<string> => differingCanonicalParts(canonicalState(a), canonicalState(b))

/** The settled runs per generation a snapshot's projections were folded with (its canonical JSON's `runs.retain`). */
const retainedIn = (text: string): number | undefined => {
  try {
    const retain = (JSON.parse(text) as Partial<CanonicalState> | null)?.runs?.retain
    return typeof retain === "number" ? retain : undefined
  } catch {
    return undefined
  }
}

/**
 * Folds the whole journal from `from` (the empty state keeping the settled runs the owner keeps)
 * and compares the result with the latest checkpoint and with the running owner's state.
 */
/** `owner.state`: the running owner's state; none running (undefined); or why it was not had (its sentence). */
export const replay = (owner: { readonly state: Effect.Effect<LiveOwnerState | string | undefined> } = { state: Effect.succeed(undefined) }, from: OwnerState = initialState) =>
  Effect.gen(function* () {
    const checkpoints = yield* Checkpoints
    const checkpoint = yield* checkpoints.latest
    const hashing = yield* Hashing
    const divergences: Array<Divergence> = []
    const seen: { matches: boolean | null } = { matches: null }
    const hooks = new Map<number, (state: OwnerState) => Effect.Effect<void>>()
    const form = checkpoint === undefined ? undefined : digestForm(checkpoint.digest)
    const sameForm = form === CURRENT_FORM
    // A checkpoint written while the owner kept another number of settled runs (its setting
    // changed since) digests other projections: said so, not reported as a divergence.
    let retainedThen: number | undefined
    if (checkpoint !== undefined && sameForm) {
      const snapshot = yield* checkpoints.snapshot
      const then = snapshot !== undefined && snapshot.sequence === checkpoint.sequence ? retainedIn(snapshot.state) : undefined
      if (then !== undefined && then !== from.runs.retain) retainedThen = then
    }
    const comparable = sameForm && retainedThen === undefined
    if (checkpoint !== undefined && comparable) {
      hooks.set(checkpoint.sequence, (state) =>
        Effect.sync(() => {
          const digest = digestOf(hashing, state)
          seen.matches = digest === checkpoint.digest
          if (!seen.matches) {
            divergences.push({
              against: "checkpoint",
              sequence: checkpoint.sequence,
              // Whole: cut to a few digits, two digests that differ only further on read alike.
              message: `the projections rebuilt to sequence ${checkpoint.sequence} have digest ${digest}, the checkpoint says ${checkpoint.digest}`
            })
          }
        })
      )
    }
    const started = yield* Clock.currentTimeMillis
    const { events, gaps, state } = yield* foldJournal(hooks, from)
    const seconds = ((yield* Clock.currentTimeMillis) - started) / 1000
    for (const gap of gaps) {
      divergences.push({ against: "journal", sequence: gap.from, message: `${gapText(gap)}: sequences run without gaps, so rows were deleted from the journal` })
    }
    if (checkpoint !== undefined && comparable && seen.matches === null) {
      seen.matches = false
      divergences.push({
        against: "checkpoint",
        sequence: checkpoint.sequence,
        message: `the checkpoint is at sequence ${checkpoint.sequence}, past the journal's last event ${state.sequence}: events it saw are missing`
      })
    }
    if (checkpoint !== undefined && form === undefined) {
      divergences.push({
        against: "checkpoint",
        sequence: checkpoint.sequence,
        message: `the checkpoint's digest ${JSON.stringify(checkpoint.digest.slice(0, 24))}${checkpoint.digest.length > 24 ? "…" : ""} is of no form svc writes (pN: and 64 hexadecimal digits): it was edited or damaged`
      })
    }
    const live = yield* owner.state
    let ownerResult: ReplayReport["owner"] = { compared: false, reason: typeof live === "string" ? live : "no owner runtime is running for this SVC_HOME" }
    if (typeof live === "object") {
      // The owner may have moved on since it answered; compare only when both saw the same events.
      if (live.sequence !== state.sequence) {
        ownerResult = { compared: false, reason: `the owner is at sequence ${live.sequence}, the journal read at ${state.sequence}` }
      } else {
        const parts = differingCanonicalParts(canonicalState(state), live.state)
        ownerResult = { compared: true, matches: parts.length === 0 }
        if (parts.length > 0) divergences.push({ against: "owner", sequence: state.sequence, message: `the running owner's ${parts.join(", ")} differ from the replayed ones` })
      }
    }
    return {
      events,
      head: state.sequence,
      seconds,
      eventsPerSecond: seconds > 0 ? Math.round(events / seconds) : events,
      checkpoint:
        checkpoint === undefined
          ? null
          : comparable
            ? { ...checkpoint, matches: seen.matches === true }
            : retainedThen !== undefined
              ? { ...checkpoint, matches: null, form: "retention", retained: retainedThen }
              : form === undefined
                ? { ...checkpoint, matches: false, form: "unknown" }
                : { ...checkpoint, matches: null, form: form > CURRENT_FORM ? "later" : "earlier" },
      retained: from.runs.retain,
      owner: ownerResult,
      divergences
    } satisfies ReplayReport
  })
