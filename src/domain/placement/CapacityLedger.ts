/**
 * The three capacity ledgers of placement layer 2 (spec, "Capacity"): the logical quota that
 * admission reserves, the physical slots on each execution host, and the shared capacity of
 * inference endpoints. Folded from events; today the journal holds worker facts only, so
 * physical capacity comes from advertisements and nothing is reserved yet (claims, runs and
 * agents add their events in later work).
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

export const evolveLedger = (ledger: CapacityLedger, envelope: Envelope): CapacityLedger => {
  const e = envelope.event
  switch (e._tag) {
    case "WorkerAdvertised": {
      const current = HashMap.get(ledger.physical, e.workerId)
      const reserved = current._tag === "Some" ? current.value.reserved : 0
      if (current._tag === "Some" && current.value.capacity === e.capacity) return ledger
      return { ...ledger, physical: HashMap.set(ledger.physical, e.workerId, { capacity: e.capacity, reserved }) }
    }
    // A revoked worker's reserved slots stay reserved until the owner observes the work stopped.
    default:
      return ledger
  }
}
