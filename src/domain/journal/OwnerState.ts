/**
 * Everything the owner derives from its journal, as one pure fold: the worker registry, the
 * audit log, the capacity ledger and the runs. The same `evolve` runs live (after each commit) and in
 * replay, so a divergence between them is a bug, and `svc journal replay` looks for it.
 */
import * as Chunk from "effect/Chunk"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import { applyLedger, evolveLedger, initialLedger, type CapacityLedger, type LedgerMaps } from "../placement/CapacityLedger.js"
import { auditRowOf, evolveAudit, initialAudit, type AuditLog, type AuditRow } from "../workers/Audit.js"
import { emptyRuns, evolveRuns, initialRuns, type RunsState } from "../runs/Runs.js"
import { applyRegistry, evolveRegistry, initialRegistry, type Registry, type RegistryMaps } from "../workers/Registry.js"
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

/** The empty state keeping `retain` settled runs per generation (Runs.ts; tests use small ones). */
export const initialStateRetaining = (retain: number): OwnerState => ({ ...initialState, runs: emptyRuns(retain) })

export const evolve = (state: OwnerState, envelope: Envelope): OwnerState => ({
  sequence: envelope.sequence,
  registry: evolveRegistry(state.registry, envelope),
  audit: evolveAudit(state.audit, envelope),
  ledger: evolveLedger(state.ledger, envelope),
  runs: evolveRuns(state.runs, envelope)
})

/**
 * A map being folded into: the changes since the last `done` in a plain `Map`, over the
 * persistent map they started from. Values are never undefined. A value in `changes` was made
 * by this fold and nobody else has seen it yet, so `update` changes it in place; a value from
 * the persistent map is copied first.
 */
class DraftMap<V extends object> {
  private readonly changes = new Map<string, V>()
  constructor(private base: HashMap.HashMap<string, V>) {}
  readonly get = (key: string): V | undefined => {
    const changed = this.changes.get(key)
    if (changed !== undefined || HashMap.isEmpty(this.base)) return changed
    const found = HashMap.get(this.base, key)
    return found._tag === "Some" ? found.value : undefined
  }
  readonly set = (key: string, value: V): void => void this.changes.set(key, value)
  /** Whether `value` is the change this fold made to `key` (its own, to change in place). */
  readonly owns = (key: string, value: V): boolean => this.changes.get(key) === value
  readonly update = (key: string, value: V, change: Partial<V>): void => {
    if (this.owns(key, value)) Object.assign(value, change)
    else this.changes.set(key, { ...value, ...change })
  }
  /** The persistent map with every change so far; later changes start from it. */
  done(): HashMap.HashMap<string, V> {
    if (this.changes.size > 0) {
      const changes = this.changes
      this.base = HashMap.mutate(this.base, (m) => {
        for (const [key, value] of changes) HashMap.set(m, key, value)
      })
      changes.clear()
    }
    return this.base
  }
}

/**
 * A fold in progress (`folder`): `add` folds events in as `evolve` would, one by one, into
 * plain mutable maps; `state` gives the state so far as an `OwnerState` and goes on from it.
 * The registry, ledger and audit changes go to `Map`s and an array and become persistent
 * maps and a chunk only in `state`, so a long fold (replaying a whole journal) sets each
 * worker's, invite's and host's final record once instead of copying a path of a hashed trie
 * per event. Runs fold with `evolveRuns` on maps opened for mutation (Effect's transients).
 */
export interface Folder {
  /** The last sequence folded in. */
  readonly sequence: number
  readonly add: (envelope: Envelope) => void
  readonly state: () => OwnerState
}

export const folder = (from: OwnerState): Folder => {
  let sequence = from.sequence
  const workers = new DraftMap(from.registry.workers)
  const invites = new DraftMap(from.registry.invites)
  const registry: RegistryMaps = {
    worker: workers.get,
    setWorker: workers.set,
    updateWorker: workers.update,
    invite: invites.get,
    setInvite: invites.set,
    updateInvite: invites.update
  }
  const physical = new DraftMap(from.ledger.physical)
  const ledgerMaps: LedgerMaps = {
    slots: physical.get,
    setSlots: (host, current, capacity, reserved) => {
      if (current !== undefined && physical.owns(host, current)) {
        const slots = current as { capacity: number; reserved: number }
        slots.capacity = capacity
        slots.reserved = reserved
      } else physical.set(host, { capacity, reserved })
    }
  }
  let audit = from.audit
  let rows: Array<AuditRow> = []
  // Every map and set of the runs' state, opened for mutation while a batch folds and closed after it.
  const eachMap = (
    r: RunsState,
    f: <K, V>(m: HashMap.HashMap<K, V>) => HashMap.HashMap<K, V>,
    g: <A>(m: HashSet.HashSet<A>) => HashSet.HashSet<A>
  ): RunsState => ({
    ...r,
    runs: f(r.runs),
    open: f(r.open),
    held: f(r.held),
    pending: f(r.pending),
    settled: g(r.settled),
    settledBefore: g(r.settledBefore)
  })
  const openRuns = (r: RunsState): RunsState => eachMap(r, HashMap.beginMutation, HashSet.beginMutation)
  let runs = openRuns(from.runs)
  let current = from
  return {
    get sequence() {
      return sequence
    },
    add: (envelope) => {
      sequence = envelope.sequence
      applyRegistry(registry, envelope)
      const row = auditRowOf(envelope)
      if (row !== undefined) rows.push(row)
      applyLedger(ledgerMaps, envelope)
      runs = evolveRuns(runs, envelope)
    },
    state: () => {
      if (rows.length > 0) {
        // The rows array becomes the chunk's own; new rows go to a new array.
        audit = Chunk.appendAll(audit, Chunk.unsafeFromArray(rows))
        rows = []
      }
      const closed = eachMap(runs, HashMap.endMutation, HashSet.endMutation)
      runs = openRuns(closed)
      current = {
        sequence,
        registry: { workers: workers.done(), invites: invites.done() },
        audit,
        ledger: { ...current.ledger, physical: physical.done() },
        runs: closed
      }
      return current
    }
  }
}

/**
 * `evolve` over many events, as one step (a `folder` from `state`). The input state is not
 * changed, and the result equals folding `evolve` event by event (a property test checks it).
 */
export const fold = (state: OwnerState, envelopes: Iterable<Envelope>): OwnerState => {
  const f = folder(state)
  for (const e of envelopes) f.add(e)
  return f.state()
}

const byKey = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
const sortedEntries = <V>(map: HashMap.HashMap<string, V>): Array<[string, V]> => Array.from(HashMap.entries(map)).sort(([a], [b]) => byKey(a, b))

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
  runs: {
    kept: sortedEntries(state.runs.runs),
    // Which settled runs are forgotten next, and how many were: decided by the fold, so compared too.
    settled: Array.from(state.runs.settled).sort(byKey),
    settledBefore: Array.from(state.runs.settledBefore).sort(byKey),
    forgotten: state.runs.forgotten,
    retain: state.runs.retain
  }
})

/** The parts of the canonical state, by which a divergence is named. */
export const STATE_PARTS = ["workers", "invites", "audit", "ledger", "runs"] as const
