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
 * no worker on it (Freshness.ts, `noteAwake`). Differences under `TOLERANCE_MS` are no step:
 * the two clocks are read apart and a loaded machine's scheduler comes between them, so they
 * disagree by milliseconds, tens of them on a busy VM (a tolerance of 5 ms logged "went back 0.0
 * s" every few minutes there, and added each one to the offset for good: hygiene audit). Such a
 * difference is still never a time going back: a reading is never less than the one before.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"

/** Below this, the wall clock behind the monotonic one is jitter between two readings, not a step back. */
export const TOLERANCE_MS = 1_000

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
  const stepBack = deficit >= TOLERANCE_MS ? Math.round(deficit) : 0
  const offset = s.offset + stepBack
  const now = Math.max(wall + offset, s.last)
  return { state: { offset, last: now, lastMono: mono }, now, stepBack }
}

/**
 * How far behind a time the runtime must not go back from (the journal's last event, at a start)
 * its clock is carried forward: beyond a day the machine's clock is taken as it is, said, rather
 * than every time the runtime shows staying that far ahead of it across restarts (a clock that
 * was a year ahead once). A day covers every time rule (the longest, 24 h) and the day of slack
 * certificates are given for clocks that differ (docs/operations.md, "The machine's clock").
 */
export const MAX_CARRIED_MS = 24 * 60 * 60 * 1000

/** What `goOnFrom` did: nothing (the clock is not behind), carried the time forward by `behind` ms, or left it `behind` (more than a day). */
export type Carried = { readonly kind: "none" } | { readonly kind: "carried"; readonly behind: number } | { readonly kind: "too-far"; readonly behind: number }

/**
 * Pure: the state after the reading `s` (its time `s.last`) when the time must not go back from
 * `floor`: the offset grows by how far behind the reading is, so that the next reading goes on
 * from `floor` at the monotonic clock's pace (and is no step back).
 */
export const carriedFrom = (s: SteadyState, floor: number): { readonly state: SteadyState; readonly carried: Carried } => {
  const behind = floor - s.last
  if (behind <= 0) return { state: s, carried: { kind: "none" } }
  if (behind > MAX_CARRIED_MS) return { state: s, carried: { kind: "too-far", behind } }
  return { state: { offset: s.offset + behind, last: floor, lastMono: s.lastMono }, carried: { kind: "carried", behind } }
}

export interface SteadyClock extends Clock.Clock {
  /** The time must not go back from `floor` (the journal's last event, at a start): see `carriedFrom`. */
  readonly goOnFrom: (floor: number) => Carried
}

/**
 * Effect's clock with `currentTimeMillis` read so (its nanoseconds are monotonic already: the
 * wall clock at the start plus the process's high-resolution time). `stepped` hears each step
 * back found, once (the runtime logs it).
 */
export const makeSteadyClock = (
  options: { readonly wall?: () => number; readonly mono?: () => number; readonly stepped?: (ms: number) => void } = {}
): SteadyClock => {
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
  const goOnFrom = (floor: number): Carried => {
    read()
    const r = carriedFrom(state!, floor)
    state = r.state
    return r.carried
  }
  return {
    goOnFrom,
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: read,
    currentTimeMillis: Effect.sync(read),
    unsafeCurrentTimeNanos: () => base.unsafeCurrentTimeNanos(),
    currentTimeNanos: base.currentTimeNanos,
    sleep: (duration) => base.sleep(duration)
  }
}

const spanText = (ms: number): string =>
  ms < 120_000 ? `${(ms / 1000).toFixed(1)} s` : ms < 2 * 3_600_000 ? `${Math.round(ms / 60_000)} min` : ms < 48 * 3_600_000 ? `${Math.round(ms / 3_600_000)} h` : `${Math.round(ms / 86_400_000)} days`

/** What the runtime logs (a warning) when it started with the machine's clock behind the journal's last event (`at`); undefined: nothing to say. */
export const carriedNote = (carried: Carried, at: number): string | undefined => {
  // Less than a second: the clocks' jitter, or the last runtime's stop a moment ago; carried, not said.
  if (carried.kind !== "none" && carried.behind < TOLERANCE_MS) return undefined
  const last = `the journal's last event (recorded at ${new Date(at).toISOString()})`
  if (carried.kind === "carried") {
    const behind = spanText(carried.behind)
    return `this machine's clock is ${behind} behind ${last}: svc serve goes on from that time (${behind} ahead of the clock until it stops), so that the journal's times do not go back and no time rule lasts longer for it (docs/operations.md, "The machine's clock")`
  }
  if (carried.kind === "too-far") {
    return `this machine's clock is ${spanText(carried.behind)} behind ${last}, more than a day: svc serve takes the clock as it is, so the journal's times go back here, and time rules measured from a time journaled before (an old credential's 5 minutes after a rotation, an invite's expiry) last that much longer; check this machine's clock (docs/operations.md, "The machine's clock")`
  }
  return undefined
}
