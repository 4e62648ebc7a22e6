/**
 * Everything the owner derives from its journal, as one pure fold: the worker registry, the
 * audit log, the capacity ledger and the runs. The same `evolve` runs live (after each commit) and in
 * replay, so a divergence between them is a bug, and `svc journal replay` looks for it.
 */
import * as Chunk from "effect/Chunk"
import * as HashMap from "effect/HashMap"
import { evolveLedger, initialLedger, type CapacityLedger } from "../placement/CapacityLedger.js"
import { evolveAudit, initialAudit, type AuditLog } from "../workers/Audit.js"
import { evolveRuns, initialRuns, type RunsState } from "../runs/Runs.js"
import { evolveRegistry, initialRegistry, type Registry } from "../workers/Registry.js"
import type { Envelope } from "./Events.js"

export interface OwnerState {
  /** The last sequence folded in; 0 for the empty journal. */
  readonly sequence: number
  readonly registry: Registry
  readonly audit: AuditLog
  readonly ledger: CapacityLedger
  readonly runs: RunsState
}

export const initialState: OwnerState = { sequence: 0, registry: initialRegistry, audit: initialAudit, ledger: initialLedger, runs: initialRuns }

export const evolve = (state: OwnerState, envelope: Envelope): OwnerState => ({
  sequence: envelope.sequence,
  registry: evolveRegistry(state.registry, envelope),
  audit: evolveAudit(state.audit, envelope),
  ledger: evolveLedger(state.ledger, envelope),
  runs: evolveRuns(state.runs, envelope)
})

/**
 * `evolve` over many events, as one step: the maps are opened for mutation at the start and
 * closed at the end (Effect's HashMap transients), so each event's update is made in place on
 * this fold's own copy instead of copying a path of the map per event. The input state is not
 * changed, and the result equals folding `evolve` event by event (a property test checks it).
 */
export const fold = (state: OwnerState, envelopes: Iterable<Envelope>): OwnerState => {
  let s: OwnerState = {
    ...state,
    registry: { workers: HashMap.beginMutation(state.registry.workers), invites: HashMap.beginMutation(state.registry.invites) },
    ledger: { ...state.ledger, physical: HashMap.beginMutation(state.ledger.physical) },
    runs: { runs: HashMap.beginMutation(state.runs.runs), open: HashMap.beginMutation(state.runs.open), held: HashMap.beginMutation(state.runs.held) }
  }
  for (const e of envelopes) s = evolve(s, e)
  return {
    ...s,
    registry: { workers: HashMap.endMutation(s.registry.workers), invites: HashMap.endMutation(s.registry.invites) },
    ledger: { ...s.ledger, physical: HashMap.endMutation(s.ledger.physical) },
    runs: { runs: HashMap.endMutation(s.runs.runs), open: HashMap.endMutation(s.runs.open), held: HashMap.endMutation(s.runs.held) }
  }
}

const sortedEntries = <V>(map: HashMap.HashMap<string, V>): Array<[string, V]> =>
  Array.from(HashMap.entries(map)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))

/**
 * The state as plain, canonically ordered JSON data: what a checkpoint digests and what
 * replay compares, so two equal states always print the same text.
 */
export const canonicalState = (state: OwnerState): unknown => ({
  sequence: state.sequence,
  workers: sortedEntries(state.registry.workers),
  invites: sortedEntries(state.registry.invites),
  audit: Chunk.toReadonlyArray(state.audit),
  ledger: {
    physical: sortedEntries(state.ledger.physical),
    logical: {
      detachedByCaller: sortedEntries(state.ledger.logical.detachedByCaller),
      unscheduledDetached: state.ledger.logical.unscheduledDetached,
      scheduled: state.ledger.logical.scheduled
    },
    endpoints: sortedEntries(state.ledger.endpoints)
  },
  runs: sortedEntries(state.runs.runs)
})

/** The parts of the canonical state, by which a divergence is named. */
export const STATE_PARTS = ["workers", "invites", "audit", "ledger", "runs"] as const
