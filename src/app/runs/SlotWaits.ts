/**
 * Attempts a worker holds while waiting for one of its machine's slots (docs/runs.md, "What an
 * owner sees of a shared worker"): the owner started them when the worker claimed, but other
 * work (another owner's attempts, the machine's own runs) took the slots in the meantime, and
 * the worker starts them when one frees. Each heartbeat says which of its attempts wait; the
 * latest one is what the owner knows. Runtime state, as freshness is: not journaled (a wait
 * decides nothing), so a restarted owner knows again at the worker's next heartbeat.
 */
export interface SlotWaits {
  /** The worker's heartbeat at `now`: these of its attempts wait for a slot, and no other. */
  readonly note: (workerId: string, waiting: ReadonlyArray<string>, now: number) => void
  /** A new session (hello): what the worker's attempts wait for is unknown until its next heartbeat. */
  readonly forget: (workerId: string) => void
  /** Since when the attempt has been said to wait on that worker, or undefined. */
  readonly since: (workerId: string, attempt: string) => number | undefined
  /** The owner's own attempt waits for one of its machine's slots from `now` (other owners' work holds them). */
  readonly begin: (host: string, attempt: string, now: number) => void
  /** It has its slot (or no longer waits). */
  readonly end: (host: string, attempt: string) => void
}

export const makeSlotWaits = (): SlotWaits => {
  const byWorker = new Map<string, ReadonlyMap<string, number>>()
  return {
    note: (workerId, waiting, now) => {
      if (waiting.length === 0) {
        byWorker.delete(workerId)
        return
      }
      const before = byWorker.get(workerId)
      // An attempt still waiting keeps the time it was first said to.
      byWorker.set(workerId, new Map(waiting.map((id) => [id, before?.get(id) ?? now] as const)))
    },
    forget: (workerId) => void byWorker.delete(workerId),
    since: (workerId, attempt) => byWorker.get(workerId)?.get(attempt),
    begin: (host, attempt, now) => void byWorker.set(host, new Map([...(byWorker.get(host) ?? []), [attempt, now]])),
    end: (host, attempt) => {
      const before = byWorker.get(host)
      if (before === undefined || !before.has(attempt)) return
      const after = new Map(before)
      after.delete(attempt)
      if (after.size === 0) byWorker.delete(host)
      else byWorker.set(host, after)
    }
  }
}
