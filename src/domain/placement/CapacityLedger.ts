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

const reserve = (ledger: CapacityLedger, host: string, delta: number): CapacityLedger => {
  const current = HashMap.get(ledger.physical, host)
  const slots = current._tag === "Some" ? current.value : { capacity: 0, reserved: 0 }
  return { ...ledger, physical: HashMap.set(ledger.physical, host, { capacity: slots.capacity, reserved: Math.max(0, slots.reserved + delta) }) }
}

export const evolveLedger = (ledger: CapacityLedger, envelope: Envelope): CapacityLedger => {
  const e = envelope.event
  switch (e._tag) {
    case "WorkerAdvertised": {
      const current = HashMap.get(ledger.physical, e.workerId)
      const reserved = current._tag === "Some" ? current.value.reserved : 0
      if (current._tag === "Some" && current.value.capacity === e.capacity) return ledger
      return { ...ledger, physical: HashMap.set(ledger.physical, e.workerId, { capacity: e.capacity, reserved }) }
    }
    case "PlacementDecided":
      return e.outcome === "placed" && e.host !== null ? reserve(ledger, e.host, 1) : ledger
    // A superseded attempt (lapsed or revoked worker) keeps its slot until cessation is observed.
    case "AttemptDeclined":
    case "AttemptReported":
    case "AttemptCeased":
      return reserve(ledger, e.host, -1)
    default:
      return ledger
  }
}
