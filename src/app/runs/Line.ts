/**
 * The line of pending runs (docs/runs.md, "A backlog"): per kind of run (domain/runs/Decide.ts,
 * `placementKind`), its pending runs in submission order. A scheduler round decides the first of
 * each kind, the next of a kind only once the one before it was placed, and leaves the rest in
 * line: under a backlog of thousands a round is one decision per kind, not a pass over them all
 * (one round follows each run finished). Kept in memory: a run submitted joins the end of its
 * kind's line; the line is made again from every pending run when a run may be pending again
 * (declined, superseded: `MAKES_PENDING_AGAIN`), and at least every `REMAKE_MS`; a run that left
 * it (placed, stopped) is passed over when met.
 */
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"

/** A pending run in line: the first run of its kind, left unplaced, and how many of its kind are pending before it (that one included). */
export interface InLine {
  readonly behind: string
  readonly ahead: number
}

/**
 * Events after which a run may be pending again that was not (with its submission's place in the
 * order, among the others): the line is made again. A run submitted joins the end of its kind's
 * line instead (`add`): it is the latest submitted.
 */
export const MAKES_PENDING_AGAIN: ReadonlySet<string> = new Set(["AttemptDeclined", "AttemptSuperseded"])

/** The line is made again from every pending run at least this often, whatever happened (ids that left it are dropped then). */
export const REMAKE_MS = 5_000

type Pending = HashMap.HashMap<string, number>

interface Queue {
  readonly ids: Array<string>
  /** The index of its first run still pending, as last met. */
  next: number
}

/** A run to decide this round: the first of its kind (`kind` set), or a run with declines (judged on its own each round). */
export interface Head {
  readonly id: string
  readonly kind: string | undefined
}

export class Line {
  private queues = new Map<string, Queue>()
  /** Pending runs with declines: their kind changes as declines are lifted, so a round judges each of them. */
  private declined: ReadonlyArray<string> = []
  private stale = true
  private madeAt = Number.NEGATIVE_INFINITY
  /** The first of each kind the last round left unplaced. */
  private firsts = new Map<string, string>()
  private pending: Pending = HashMap.empty()
  private made: Map<string, InLine> | undefined = new Map()
  /** Runs submitted since the line was made or last joined, in the order of their commits. */
  private added: Array<string> = []
  /** The latest submission (its sequence) the line holds. */
  private through = Number.NEGATIVE_INFINITY

  /** A run may be pending again: the next round makes the line again. */
  invalidate(): void {
    this.stale = true
    this.added = []
  }

  /** A run submitted: it joins the end of its kind's line at the next round (unless the line is made again then). */
  add(runId: string): void {
    if (!this.stale) this.added.push(runId)
  }

  /** The runs submitted since, that are still pending, at the end of their kinds' lines, in submission order. */
  join(pending: Pending, kindOf: (id: string) => string | undefined): void {
    if (this.added.length === 0) return
    // Not one the line holds already (submitted as it was made: in both): submissions come in sequence order.
    const sequence = (id: string) => Option.getOrElse(HashMap.get(pending, id), () => Number.NEGATIVE_INFINITY)
    const added = this.added.filter((id) => sequence(id) > this.through)
    this.added = []
    added.sort((a, b) => sequence(a) - sequence(b))
    const declined = [...this.declined]
    for (const id of added) {
      this.through = sequence(id)
      const kind = kindOf(id)
      if (kind === undefined) {
        declined.push(id)
        continue
      }
      const queue = this.queues.get(kind)
      if (queue === undefined) this.queues.set(kind, { ids: [id], next: 0 })
      else queue.ids.push(id)
    }
    this.declined = declined
  }

  needsMaking(now: number): boolean {
    return this.stale || now - this.madeAt >= REMAKE_MS
  }

  /** Made from every pending run, in submission order; `kindOf` answers undefined for a run with declines. */
  make(pending: Pending, kindOf: (id: string) => string | undefined, now: number): void {
    const sorted = [...pending].sort(([, a], [, b]) => a - b)
    const queues = new Map<string, Queue>()
    const declined: Array<string> = []
    this.through = sorted.length === 0 ? Number.NEGATIVE_INFINITY : sorted[sorted.length - 1]![1]
    for (const [id] of sorted) {
      const kind = kindOf(id)
      if (kind === undefined) {
        declined.push(id)
        continue
      }
      const queue = queues.get(kind)
      if (queue === undefined) queues.set(kind, { ids: [id], next: 0 })
      else queue.ids.push(id)
    }
    this.queues = queues
    this.declined = declined
    this.stale = false
    this.madeAt = now
    this.added = []
  }

  /** A round's start: the first pending run of each kind, and every pending run with declines. */
  heads(pending: Pending): Array<Head> {
    this.pending = pending
    this.firsts = new Map()
    this.made = undefined
    const out: Array<Head> = []
    for (const [kind, queue] of this.queues) {
      const id = this.firstOf(queue)
      if (id === undefined) this.queues.delete(kind)
      else out.push({ id, kind })
    }
    for (const id of this.declined) if (HashMap.has(pending, id)) out.push({ id, kind: undefined })
    return out
  }

  /** The run after `id` in its kind's line, once `id` has left it (placed, stopped); undefined: none. */
  after(kind: string, pending: Pending): string | undefined {
    const queue = this.queues.get(kind)
    if (queue === undefined) return undefined
    this.pending = pending
    queue.next++
    return this.firstOf(queue)
  }

  /** `id`, the first of `kind`, was left unplaced this round: the rest of its kind waits behind it. */
  leftUnplaced(kind: string, id: string): void {
    this.firsts.set(kind, id)
  }

  /** Where a pending run is in line, as the last round left it; undefined when it is first, or not in a line. */
  get(runId: string): InLine | undefined {
    this.made ??= this.inLine()
    return this.made.get(runId)
  }

  private firstOf(queue: Queue): string | undefined {
    while (queue.next < queue.ids.length && !HashMap.has(this.pending, queue.ids[queue.next]!)) queue.next++
    return queue.ids[queue.next]
  }

  /** Who is behind whom: worked out when a view first asks after a round (rounds are many, views few). */
  private inLine(): Map<string, InLine> {
    const out = new Map<string, InLine>()
    for (const [kind, first] of this.firsts) {
      const queue = this.queues.get(kind)
      if (queue === undefined || queue.ids[queue.next] !== first) continue
      let ahead = 1
      for (let i = queue.next + 1; i < queue.ids.length; i++) {
        const id = queue.ids[i]!
        if (!HashMap.has(this.pending, id)) continue
        out.set(id, { behind: first, ahead: ahead++ })
      }
    }
    return out
  }
}
