/**
 * The stored layout of `PlacementDecided` versions 2 and 3 ("packed"): a decision over N candidates
 * repeats the same few lists (labels, capabilities, artifacts...) and the same few exclusion
 * records N times, so the stored payload keeps each distinct one once and refers to it by
 * index. Read back, it is the event's fields again, exactly (docs/journal.md, "Packed
 * events"); in memory, in `svc journal export` and to the audit, nothing changes.
 *
 * Layout (the event's other fields are stored as they are):
 *
 *   lists:       string lists, each distinct one once (scope, labels, capabilities, bins)
 *   artifacts:   artifact lists, each distinct one once
 *   exclusions:  exclusion records, each distinct one once
 *   candidates:  one row per candidate:
 *                [id, name, flags, scope, labels, capabilities, bins, artifacts, slots capacity, slots used]
 *                flags: 1 owner, 2 revoked, 4 advertisement alive; list fields: indices
 *   verdicts:    one row per verdict, in the candidates' order:
 *                [exclusion indices, score ([locality, preference] or null)], and, only when a
 *                verdict is not about the candidate in the same place, [..., candidate, name]
 *
 * Pure functions over plain JSON values.
 */

import { VerdictList, type Candidate, type CandidateVerdict as Verdict, type Exclusion, type RecordedVerdict, type Silence, type VerdictTable } from "../placement/Placement.js"

type Json = Record<string, unknown>

/** Each decision's number: a table holds a content when its stamp for it is the decision's. */
let decision = 0

/**
 * Each distinct value once, in the order first seen, for the decision being packed; one per kind
 * of value (string lists, artifact lists, exclusion records). A value gets a number for its
 * content once, remembered per object: candidates keep the very same lists from one decision
 * to the next (until their worker advertises something else), so each is written out as text
 * once, not once per decision; values are immutable, so an object's number never changes. The
 * numbers are dense, so a table finds whether it holds a content in arrays indexed by them, not
 * in maps of its own (two maps per table per decision were most of what packing allocated,
 * about 16 KB a job at 50 candidates: bench/dispatch). A memo, no state anyone sees: past
 * MAX_CONTENTS distinct contents it starts again, between two decisions.
 */
const MAX_CONTENTS = 65_536
const table = <A extends object>() => {
  let ids = new WeakMap<object, number>()
  let idsByText = new Map<string, number>()
  // For each content: the decision that last saw it, and where it is in that decision's table.
  let stamps: Array<number> = []
  let positions: Array<number> = []
  const contentOf = (value: object): number => {
    let id = ids.get(value)
    if (id === undefined) {
      const text = JSON.stringify(value)
      id = idsByText.get(text)
      if (id === undefined) {
        id = idsByText.size
        idsByText.set(text, id)
      }
      ids.set(value, id)
    }
    return id
  }
  return {
    /** A table for the decision being packed. */
    start: () => {
      if (idsByText.size > MAX_CONTENTS) {
        ids = new WeakMap()
        idsByText = new Map()
        stamps = []
        positions = []
      }
      const values: Array<A> = []
      return {
        values,
        index: (value: A): number => {
          const id = contentOf(value)
          if (stamps[id] === decision) return positions[id]!
          stamps[id] = decision
          positions[id] = values.length
          values.push(value)
          return values.length - 1
        }
      }
    }
  }
}
/** A candidate's flags: 1 owner, 2 revoked, 4 advertisement alive, then why it is not (Candidate.silence). */
const SILENCE_BITS: Readonly<Record<Silence, number>> = { ended: 8, unheard: 16, never: 32, hello: 64 }
const silenceOf = (flags: number): Silence | undefined =>
  (flags & 8) !== 0 ? "ended" : (flags & 16) !== 0 ? "unheard" : (flags & 32) !== 0 ? "never" : (flags & 64) !== 0 ? "hello" : undefined

const listTables = table<ReadonlyArray<string>>()
const artifactTables = table<Candidate["artifacts"]>()
const exclusionTables = table<Exclusion>()

/** The packed payload of a `PlacementDecided` payload (its fields, without the tag). */
export const packPlacement = (payload: Json): Json => {
  const { candidates, verdicts, ...rest } = payload as Json & { candidates: ReadonlyArray<Candidate>; verdicts: ReadonlyArray<Verdict> }
  decision++
  const lists = listTables.start()
  const artifacts = artifactTables.start()
  const exclusions = exclusionTables.start()
  const rows = candidates.map((c) => [
    c.id,
    c.name,
    (c.isOwner ? 1 : 0) | (c.revoked ? 2 : 0) | (c.advertisementAlive ? 4 : 0) | (c.silence === undefined ? 0 : SILENCE_BITS[c.silence]),
    lists.index(c.scope),
    lists.index(c.labels),
    lists.index(c.capabilities),
    lists.index(c.bins),
    artifacts.index(c.artifacts),
    c.slots.capacity,
    c.slots.used
  ])
  const judged = verdicts.map((v, i) => {
    const row: Array<unknown> = [v.exclusions.map(exclusions.index), v.score === null ? null : [v.score.locality, v.score.preference]]
    const c = candidates[i]
    if (c === undefined || c.id !== v.candidate || c.name !== v.name) row.push(v.candidate, v.name)
    return row
  })
  return { ...rest, lists: lists.values, artifacts: artifacts.values, exclusions: exclusions.values, candidates: rows, verdicts: judged }
}

const fail = (what: string): never => {
  throw new Error(`a packed PlacementDecided is malformed: ${what}`)
}
const at = <A>(table: ReadonlyArray<A>, i: unknown, what: string): A =>
  typeof i === "number" && Number.isInteger(i) && i >= 0 && i < table.length ? table[i]! : fail(`${what} index ${JSON.stringify(i)} is out of range`)

/** A packed payload's tables, checked to be arrays. */
const tablesOf = (payload: Json) => {
  const { lists, artifacts, exclusions, candidates, verdicts, ...rest } = payload
  if (!Array.isArray(lists) || !Array.isArray(artifacts) || !Array.isArray(exclusions) || !Array.isArray(candidates) || !Array.isArray(verdicts)) {
    return fail("lists, artifacts, exclusions, candidates and verdicts must be arrays")
  }
  return { lists, artifacts, exclusions, candidates, verdicts, rest }
}

/** The event's fields again from a packed payload. */
export const unpackPlacement = (payload: Json): Json => {
  const { rest } = tablesOf(payload)
  return { ...rest, candidates: unpackCandidates(payload), verdicts: unpackVerdicts(payload) }
}

/** The candidates of a packed payload. */
export const unpackCandidates = (payload: Json): Array<Candidate> => {
  const { lists, artifacts, candidates } = tablesOf(payload)
  return candidates.map((row: unknown, i) => {
    if (!Array.isArray(row) || row.length !== 10) return fail(`candidate ${i} is not a row of 10`)
    const [id, name, flags, scope, labels, capabilities, bins, held, capacity, used] = row as Array<unknown>
    const silence = silenceOf(flags as number)
    return {
      id: id as string,
      name: name as string,
      isOwner: ((flags as number) & 1) !== 0,
      revoked: ((flags as number) & 2) !== 0,
      advertisementAlive: ((flags as number) & 4) !== 0,
      // Only when recorded: a decision from before the field reads as it was made.
      ...(silence === undefined ? {} : { silence }),
      scope: at(lists, scope, "scope"),
      labels: at(lists, labels, "labels"),
      capabilities: at(lists, capabilities, "capabilities"),
      bins: at(lists, bins, "bins"),
      artifacts: at(artifacts, held, "artifacts"),
      slots: { capacity: capacity as number, used: used as number }
    }
  })
}

/**
 * The verdicts of a packed payload. A verdict about the candidate in its own place names it by
 * that candidate's row (its id and name are its first two cells), so they can be read without
 * making the candidates.
 */
export const unpackVerdicts = (payload: Json): Array<Verdict> => {
  const { exclusions, verdicts, candidates } = tablesOf(payload)
  return verdicts.map((row: unknown, i) => {
    if (!Array.isArray(row) || (row.length !== 2 && row.length !== 4) || !Array.isArray(row[0])) return fail(`verdict ${i} is not a row of 2 or 4`)
    const score = row[1] as [number, number] | null
    const c = row.length === 4 ? undefined : ((candidates[i] as ReadonlyArray<unknown> | undefined) ?? fail(`verdict ${i} has no candidate`))
    return {
      candidate: (row.length === 4 ? row[2] : c![0]) as string,
      name: (row.length === 4 ? row[3] : c![1]) as string,
      exclusions: (row[0] as Array<unknown>).map((x) => at(exclusions, x, "exclusion")),
      score: score === null ? null : { locality: score[0], preference: score[1] }
    }
  })
}

/**
 * Where a decision read from the journal keeps its packed payload (checked as it was read), so
 * that its candidates and verdicts can be made only when asked for, and its verdicts read in
 * place until then (`verdictTableOf`). Not enumerable: not part of the event's data.
 */
export const PACKED: unique symbol = Symbol.for("svc/PlacementDecided/packed")

/** The verdicts of a checked packed payload, read in place. */
class PackedVerdicts implements VerdictTable {
  private readonly exclusions: ReadonlyArray<Exclusion>
  private readonly rows: ReadonlyArray<ReadonlyArray<unknown>>
  private readonly candidates: ReadonlyArray<ReadonlyArray<unknown>>
  constructor(payload: Json) {
    this.exclusions = payload["exclusions"] as ReadonlyArray<Exclusion>
    this.rows = payload["verdicts"] as ReadonlyArray<ReadonlyArray<unknown>>
    this.candidates = payload["candidates"] as ReadonlyArray<ReadonlyArray<unknown>>
  }
  get size() {
    return this.rows.length
  }
  candidate(i: number) {
    const row = this.rows[i]!
    return (row.length === 4 ? row[2] : this.candidates[i]![0]) as string
  }
  name(i: number) {
    const row = this.rows[i]!
    return (row.length === 4 ? row[3] : this.candidates[i]![1]) as string
  }
  exclusionCount(i: number) {
    return (this.rows[i]![0] as ReadonlyArray<number>).length
  }
  exclusion(i: number, j: number) {
    return this.exclusions[(this.rows[i]![0] as ReadonlyArray<number>)[j]!]!
  }
}

/** A decision's verdicts as a table: from its packed payload when it was read from the journal and they were not made yet. */
export const verdictTableOf = (e: { readonly verdicts: ReadonlyArray<RecordedVerdict> }): VerdictTable => {
  const packed = (e as { readonly [PACKED]?: Json })[PACKED]
  return packed !== undefined ? new PackedVerdicts(packed) : new VerdictList(e.verdicts)
}
