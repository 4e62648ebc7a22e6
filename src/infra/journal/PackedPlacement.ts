/**
 * Reading a stored PlacementDecided (packed, docs/journal.md "Packed events") without making its
 * candidates or its verdicts until they are asked for: a replay folds every decision, and the
 * fold needs neither (it explains and keys each decision from its stored rows, through
 * `verdictTableOf`); making and collecting them was about half of a run-heavy journal's fold
 * beyond `JSON.parse` (bench/journal-replay --corpus runs).
 *
 * The event is still checked as it is read: the packed rows themselves (each distinct list,
 * artifact list and exclusion record once, where the full read checks those of every candidate
 * and verdict), and every other field with the guard the full read uses. The check is never
 * looser than the full read: it may refuse what the full read would accept (then the full read
 * decides, as for any event this path does not take), never the reverse. The candidates and the
 * verdicts are made on first access, once, from the checked payload the event keeps (under
 * `PACKED`, not enumerable), so they cannot fail then. The accessors are the same two objects
 * for every event: V8 keeps an accessor's function in the object's hidden class, so a closure
 * per event would give every event a hidden class of its own.
 */
import * as Schema from "effect/Schema"
import { HeldArtifact, PlacementDecided, PlacementExclusion } from "../../domain/journal/Events.js"
import { PACKED, unpackCandidates, unpackVerdicts } from "../../domain/journal/PlacementPacking.js"
import { fastGuardOf } from "../schema/Guard.js"

type Json = Record<string, unknown>

const { _tag, candidates: _candidates, verdicts: _verdicts, ...otherFields } = PlacementDecided.fields
/** Every declared field but the candidates and verdicts, checked as the full read checks them. */
const isRest = fastGuardOf(Schema.Struct(otherFields).ast)
const isStrings = fastGuardOf(Schema.Array(Schema.String).ast)
const isArtifacts = fastGuardOf(Schema.Array(HeldArtifact).ast)
/** One exclusion record, as the full read checks each verdict's. */
const isExclusion = fastGuardOf(PlacementExclusion.ast)
/** The declared fields in their declared order: the order the constructor sets them in. */
const NAMES = Object.keys(PlacementDecided.fields).filter((name) => name !== "_tag")
const TABLES = new Set(["lists", "artifacts", "exclusions", "candidates", "verdicts"])

/** Whether `i` indexes `table` at a value `ok` accepts, each index looked at once (`seen`). */
const checkedAt = (table: ReadonlyArray<unknown>, seen: Array<boolean | undefined>, i: unknown, ok: (u: unknown) => boolean): boolean => {
  if (typeof i !== "number" || !Number.isInteger(i) || i < 0 || i >= table.length) return false
  let known = seen[i]
  if (known === undefined) {
    known = ok(table[i])
    seen[i] = known
  }
  return known
}

/** The candidate rows: [id, name, flags, scope, labels, capabilities, bins, artifacts, capacity, used]. */
const rowsOk = (lists: ReadonlyArray<unknown>, artifacts: ReadonlyArray<unknown>, rows: ReadonlyArray<unknown>): boolean => {
  const listSeen: Array<boolean | undefined> = []
  const artifactsSeen: Array<boolean | undefined> = []
  for (const row of rows) {
    if (!Array.isArray(row) || row.length !== 10) return false
    if (typeof row[0] !== "string" || typeof row[1] !== "string" || typeof row[2] !== "number") return false
    for (let k = 3; k <= 6; k++) if (!checkedAt(lists, listSeen, row[k], isStrings)) return false
    if (!checkedAt(artifacts, artifactsSeen, row[7], isArtifacts)) return false
    if (typeof row[8] !== "number" || typeof row[9] !== "number") return false
  }
  return true
}

/**
 * The verdict rows: [exclusion indices, score ([locality, preference] or null)], plus
 * [candidate, name] when the verdict is not about the candidate in its place (whose row, checked
 * by `rowsOk`, then names it).
 */
const verdictsOk = (exclusions: ReadonlyArray<unknown>, rows: ReadonlyArray<unknown>, candidates: ReadonlyArray<unknown>): boolean => {
  const seen: Array<boolean | undefined> = []
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]
    if (!Array.isArray(row) || !Array.isArray(row[0])) return false
    if (row.length === 4) {
      if (typeof row[2] !== "string" || typeof row[3] !== "string") return false
    } else if (row.length !== 2 || i >= candidates.length) return false
    for (const x of row[0] as Array<unknown>) if (!checkedAt(exclusions, seen, x, isExclusion)) return false
    const score = row[1]
    if (score !== null && !(Array.isArray(score) && typeof score[0] === "number" && typeof score[1] === "number")) return false
  }
  return true
}

/** An accessor that makes the field from the event's packed payload when first read, then becomes that field. */
const madeOnRead = (name: "candidates" | "verdicts", make: (packed: Json) => unknown): PropertyDescriptor => ({
  enumerable: true,
  configurable: true,
  get(this: { readonly [PACKED]: Json }) {
    const value = make(this[PACKED])
    Object.defineProperty(this, name, { value, enumerable: true, configurable: true, writable: true })
    return value
  }
})
const CANDIDATES = madeOnRead("candidates", unpackCandidates)
const VERDICTS = madeOnRead("verdicts", unpackVerdicts)

/**
 * The event a packed payload holds, its candidates and verdicts made when first read; undefined
 * when the packed check refuses it (the full read then decides, and says what is wrong).
 */
export const readPackedPlacement = (payload: Json): PlacementDecided | undefined => {
  const { lists, artifacts, exclusions, candidates, verdicts } = payload
  if (!Array.isArray(lists) || !Array.isArray(artifacts) || !Array.isArray(exclusions) || !Array.isArray(candidates) || !Array.isArray(verdicts)) return undefined
  if (!rowsOk(lists, artifacts, candidates) || !verdictsOk(exclusions, verdicts, candidates)) return undefined
  const fields: Json = {}
  for (const name of Object.keys(payload)) if (!TABLES.has(name)) fields[name] = payload[name]
  if (!isRest(fields)) return undefined
  // As the full read makes an event: an instance of the class, the declared fields in their
  // order, the tag last; the candidates and verdicts accessors that become plain fields when first read.
  const event = Object.create(PlacementDecided.prototype) as Record<string | symbol, unknown>
  Object.defineProperty(event, PACKED, { value: payload })
  for (const name of NAMES) {
    if (name === "candidates") Object.defineProperty(event, "candidates", CANDIDATES)
    else if (name === "verdicts") Object.defineProperty(event, "verdicts", VERDICTS)
    else if (name in fields) event[name] = fields[name]
  }
  event["_tag"] = "PlacementDecided"
  return event as unknown as PlacementDecided
}
