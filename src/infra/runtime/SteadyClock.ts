/**
 * The clock `svc serve` tells time by (docs/operations.md, "The machine's clock"): the wall clock,
 * except that it never goes back. Every time rule of the runtime is a difference of two of its
 * readings (a worker's advertisement lapses 15 s after it was heard, the owner gives its workers
 * 15 s after its start, an old credential works 5 min after a rotation, the journal's mark is
 * written within 10 s): measured on a wall clock stepped back (NTP correcting a clock that was
 * ahead, an operator setting the date), each of them lasted as much longer, and a worker that
 * had died looked alive for the whole step (clock audit). So a step back is measured by the
 * monotonic clock and added to an offset: the time goes on from where it was, at the pace of the
 * monotonic clock, and stays ahead of the wall clock by the step until the runtime stops.
 *
 * A step forward (or the machine suspended, which the monotonic clock does not count) is taken as
 * it comes: the runtime already takes a jump of its own time for a pause of its own, and judges
 * no worker on it (Freshness.ts, `noteAwake`). Differences under `TOLERANCE_MS` (a millisecond
 * rounded one way on the wall clock and the other on the monotonic one) are no step.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"

/** Below this, the wall clock behind the monotonic one is rounding, not a step back. */
export const TOLERANCE_MS = 5

export interface SteadyState {
  /** Added to the wall clock: the steps back seen so far. */
  readonly offset: number
  /** The last time answered (never more than a reading later than it). */
  readonly last: number
  /** The monotonic clock at that reading (ms). */
  readonly lastMono: number
}

/**
 * One reading, pure: the wall clock and the monotonic clock now (ms), and the state after the last
 * reading (undefined: the first). Answers the time (whole ms, never less than the last) and the
 * step back found at this reading (0: none).
 */
export const steadyReading = (
  s: SteadyState | undefined,
  wall: number,
  mono: number
): { readonly state: SteadyState; readonly now: number; readonly stepBack: number } => {
  if (s === undefined) return { state: { offset: 0, last: wall, lastMono: mono }, now: wall, stepBack: 0 }
  const expected = s.last + Math.max(0, mono - s.lastMono)
  const deficit = expected - (wall + s.offset)
  const stepBack = deficit > TOLERANCE_MS ? Math.round(deficit) : 0
  const offset = s.offset + stepBack
  const now = Math.max(wall + offset, s.last)
  return { state: { offset, last: now, lastMono: mono }, now, stepBack }
}

/**
 * Effect's clock with `currentTimeMillis` read so (its nanoseconds are monotonic already: the
 * wall clock at the start plus the process's high-resolution time). `stepped` hears each step
 * back found, once (the runtime logs it).
 */
export const makeSteadyClock = (
  options: { readonly wall?: () => number; readonly mono?: () => number; readonly stepped?: (ms: number) => void } = {}
): Clock.Clock => {
  const base = Clock.make()
  const wall = options.wall ?? Date.now
  const mono = options.mono ?? (() => performance.now())
  let state: SteadyState | undefined
  const read = (): number => {
    const r = steadyReading(state, wall(), mono())
    state = r.state
    if (r.stepBack > 0) options.stepped?.(r.stepBack)
    return r.now
  }
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: read,
    currentTimeMillis: Effect.sync(read),
    unsafeCurrentTimeNanos: () => base.unsafeCurrentTimeNanos(),
    currentTimeNanos: base.currentTimeNanos,
    sleep: (duration) => base.sleep(duration)
  }
}
