/**
 * The three capacity ledgers of placement layer 2 (spec, "Capacity"): the logical quota that
 * admission reserves, the physical slots on each execution host, and the shared capacity of
 * inference endpoints. Folded from events: a host's capacity from its advertisements (the
 * owner's own capacity is its setting, not a journaled fact, so its entry shows 0), its
 * reserved slots from run attempts: one from placement until the host is known to have stopped
 * the attempt (reported, declined, or observed ceased). The logical and endpoint ledgers stay
 * empty until detached agents and inference endpoints exist.
 */
import * as HashMap from "effect/HashMap"
import type { Envelope } from "../journal/Events.js"

export interface PhysicalSlots {
  readonly capacity: number
  /** Slots held by activities not yet confirmed stopped. */
  readonly reserved: number
}

/** The spec's logical limits (worker-protocol.md, "Limits"). */
export const LOGICAL_LIMITS = {
  detachedAgentsPerCaller: 4,
  unscheduledDetachedAgents: 16,
  protectedScheduledShare: 4
} as const

export interface CapacityLedger {
  readonly physical: HashMap.HashMap<string, PhysicalSlots>
  readonly logical: {
    readonly detachedByCaller: HashMap.HashMap<string, number>
    readonly unscheduledDetached: number
    readonly scheduled: number
  }
  readonly endpoints: HashMap.HashMap<string, { readonly cap: number; readonly used: number }>
}

export const initialLedger: CapacityLedger = {
  physical: HashMap.empty(),
  logical: { detachedByCaller: HashMap.empty(), unscheduledDetached: 0, scheduled: 0 },
  endpoints: HashMap.empty()
}

/**
 * Where one event's changes to the physical ledger go (see `RegistryMaps`): `evolveLedger`
 * backs them with the persistent map, `OwnerState.fold` with a plain mutable one.
 */
export interface LedgerMaps {
  readonly slots: (host: string) => PhysicalSlots | undefined
  /** `current`: what `slots(host)` answered; replaced by `{ capacity, reserved }`. */
  readonly setSlots: (host: string, current: PhysicalSlots | undefined, capacity: number, reserved: number) => void
}

const reserve = (maps: LedgerMaps, host: string, delta: number): void => {
  const current = maps.slots(host)
  maps.setSlots(host, current, current === undefined ? 0 : current.capacity, Math.max(0, (current === undefined ? 0 : current.reserved) + delta))
}

/** What one event does to the ledger. */
export const applyLedger = (maps: LedgerMaps, envelope: Envelope): void => {
  const e = envelope.event
  switch (e._tag) {
    case "WorkerAdvertised": {
      const current = maps.slots(e.workerId)
      if (current !== undefined && current.capacity === e.capacity) return
      return maps.setSlots(e.workerId, current, e.capacity, current === undefined ? 0 : current.reserved)
    }
    case "PlacementDecided":
      return e.outcome === "placed" && e.host !== null ? reserve(maps, e.host, 1) : undefined
    // A superseded attempt (lapsed or revoked worker) keeps its slot until cessation is observed.
    case "AttemptDeclined":
    case "AttemptReported":
    case "AttemptCeased":
      return reserve(maps, e.host, -1)
  }
}

export const evolveLedger = (ledger: CapacityLedger, envelope: Envelope): CapacityLedger => {
  let physical = ledger.physical
  applyLedger(
    {
      slots: (host) => {
        const found = HashMap.get(physical, host)
        return found._tag === "Some" ? found.value : undefined
      },
      setSlots: (host, _current, capacity, reserved) => void (physical = HashMap.set(physical, host, { capacity, reserved }))
    },
    envelope
  )
  return physical === ledger.physical ? ledger : { ...ledger, physical }
}
