/**
 * A worker's heartbeats to one owner (docs/runs.md, "On a worker"): while anything runs here for
 * it, which attempts run and which of them wait for a slot, with the output printed since; the
 * answer says which to stop. The owner frees a stopped attempt's slot only once a heartbeat no
 * longer lists it, so one more goes after the set last changed.
 */
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { jsonBytes, MAX_BODY_BYTES, type OutputDelta } from "./Protocol.js"
import type { Call, Running, Stop, WorkState } from "./Work.js"
import { BODY_SLACK, deltaOverhead, type Delta } from "./WorkOutput.js"

/** What the heartbeats use of the work for their owner. */
export interface WorkHeartbeatsContext {
  readonly heartbeatEvery: Duration.Duration
  readonly call: Call
  readonly state: WorkState
  readonly delta: Delta
  readonly stop: Stop
}

export const makeWorkHeartbeats = ({ heartbeatEvery, call, state, delta, stop }: WorkHeartbeatsContext) => {
  const { running, carrying } = state
  /** How many of the changes to the set of running attempts (`WorkState.changes`) the last heartbeat told the owner of. */
  let told = 0

  /**
   * Every `heartbeatEvery` while anything runs, with the output printed since, as much as one
   * body carries (the attempts take turns to go first); with output left over, the next one
   * goes at once.
   */
  let backlog = false
  let turn = 0
  const heartbeating = Effect.forever(
    Effect.gen(function* () {
      if (!backlog) yield* Effect.sleep(heartbeatEvery)
      backlog = false
      // While anything runs, and once more after the set last changed: that heartbeat, listing
      // nothing, tells the owner a stopped or superseded attempt has ceased (its slot is freed).
      if (running.size === 0 && told === state.changes) return
      const done = (state.carried = yield* Deferred.make<void>())
      yield* Effect.gen(function* () {
        const telling = state.changes
        // Those still waiting for a slot here: the owner shows them so (docs/runs.md).
        const waiting = [...running].filter(([, r]) => !r.holdsSlot() && !r.reporting).map(([id]) => id)
        const base = { kind: "heartbeat" as const, fence: state.fence, running: [...running.keys()], ...(waiting.length > 0 ? { waiting } : {}) }
        let room = MAX_BODY_BYTES - BODY_SLACK - jsonBytes({ ...base, output: [] })
        const output: Array<OutputDelta> = []
        const next = new Map<string, Running["offsets"]>()
        const order = [...running]
        turn = order.length === 0 ? 0 : (turn + 1) % order.length
        for (const [id, r] of [...order.slice(turn), ...order.slice(0, turn)]) {
          // Its report carries the rest.
          if (r.reporting) continue
          if (room <= deltaOverhead(id) + 16) {
            backlog = true
            continue
          }
          carrying.add(id)
          const d = yield* delta(id, r, room)
          backlog ||= d.more
          next.set(id, d.next)
          if (d.delta.stdout !== "" || d.delta.stderr !== "") {
            output.push(d.delta)
            room -= d.bytes
          }
        }
        const answer = yield* call({ ...base, output })
        told = telling
        // Sent: the next heartbeat starts after what this one carried.
        for (const [id, offsets] of next) {
          const r = running.get(id)
          if (r !== undefined) r.offsets = offsets
        }
        if (answer.kind === "ack") yield* stop(answer.stop)
      }).pipe(
        Effect.ensuring(
          Effect.suspend(() => {
            carrying.clear()
            return Deferred.succeed(done, undefined)
          })
        )
      )
    })
  )

  return { heartbeating }
}
