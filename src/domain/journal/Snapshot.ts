/**
 * The projections back from their canonical JSON (`canonicalState`, what a checkpoint digests):
 * the owner starts from the snapshot its last checkpoint stored, then folds only the journal
 * after it (docs/journal.md, "Start-up from a snapshot"). The canonical form holds every part of
 * the state but the runs' indexes (`open`, `pending`, `held`), which are made again from the
 * runs themselves.
 *
 * Pure. A caller must check the result: `canonicalState` of it must give the very text it was
 * read from, or it is not the state that was written (app/journal/Projections.ts does).
 */
import * as Chunk from "effect/Chunk"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import type { PhysicalSlots } from "../placement/CapacityLedger.js"
import { attemptId, TERMINAL, type RunRecord, type RunsState } from "../runs/Runs.js"
import type { AuditRow } from "../workers/Audit.js"
import type { InviteRecord, WorkerRecord } from "../workers/Registry.js"
import type { OwnerState } from "./OwnerState.js"

type Entries<V> = ReadonlyArray<readonly [string, V]>

/** What `canonicalState` gives, as JSON reads it back. */
export interface CanonicalState {
  readonly sequence: number
  readonly workers: Entries<WorkerRecord>
  readonly invites: Entries<InviteRecord>
  readonly audit: ReadonlyArray<AuditRow>
  readonly ledger: {
    readonly physical: Entries<PhysicalSlots>
    readonly logical: { readonly detachedByCaller: Entries<number>; readonly unscheduledDetached: number; readonly scheduled: number }
    readonly endpoints: Entries<{ readonly cap: number; readonly used: number }>
  }
  readonly runs: {
    readonly kept: Entries<RunRecord>
    readonly settled: ReadonlyArray<string>
    readonly settledBefore: ReadonlyArray<string>
    readonly forgotten: number
    readonly retain: number
  }
}

/** The runs' indexes, made from the runs: open and pending by submission, held per host in submission and attempt order. */
const runsOf = (c: CanonicalState["runs"]): RunsState => {
  const kept = [...c.kept].sort(([, a], [, b]) => a.submittedSequence - b.submittedSequence)
  const held = new Map<string, Array<string>>()
  for (const [id, run] of kept) {
    for (const a of run.attempts) {
      if (!a.holdsSlot) continue
      const list = held.get(a.host)
      if (list === undefined) held.set(a.host, [attemptId(id, a.n)])
      else list.push(attemptId(id, a.n))
    }
  }
  return {
    runs: HashMap.fromIterable(c.kept),
    open: HashMap.fromIterable(kept.filter(([, r]) => !TERMINAL.has(r.state)).map(([id, r]) => [id, r.submittedSequence] as const)),
    held: HashMap.fromIterable(held),
    pending: HashMap.fromIterable(kept.filter(([, r]) => r.state === "pending").map(([id, r]) => [id, r.submittedSequence] as const)),
    settled: HashSet.fromIterable(c.settled),
    settledBefore: HashSet.fromIterable(c.settledBefore),
    forgotten: c.forgotten,
    retain: c.retain
  }
}

/** The state a canonical JSON value describes. */
export const stateFromCanonical = (c: CanonicalState): OwnerState => ({
  sequence: c.sequence,
  registry: { workers: HashMap.fromIterable(c.workers), invites: HashMap.fromIterable(c.invites) },
  audit: Chunk.fromIterable(c.audit),
  ledger: {
    physical: HashMap.fromIterable(c.ledger.physical),
    logical: {
      detachedByCaller: HashMap.fromIterable(c.ledger.logical.detachedByCaller),
      unscheduledDetached: c.ledger.logical.unscheduledDetached,
      scheduled: c.ledger.logical.scheduled
    },
    endpoints: HashMap.fromIterable(c.ledger.endpoints)
  },
  runs: runsOf(c.runs)
})
