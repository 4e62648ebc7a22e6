/**
 * Reading a stored PlacementDecided (packed, docs/journal.md "Packed events") without making its
 * candidates until they are asked for: a replay folds every decision, and the fold reads the
 * verdicts, never the candidates (about 30% of a run-heavy journal's fold went to making and
 * collecting them: bench/journal-replay --corpus runs).
 *
 * The event is still checked as it is read: the packed rows themselves (each distinct list and
 * artifact list once, where the full read checks the lists of every candidate), and every other
 * field with the guard the full read uses. The check is never looser than the full read: it may
 * refuse what the full read would accept (then the full read decides, as for any event this path
 * does not take), never the reverse. The candidates are made on first access, once, from the
 * stored text (parsed again: the rows checked here), so they cannot fail then. The event keeps
 * that text, not the parsed rows: one string costs the collector nothing to trace, where the
 * rows of a hundred candidates kept alive with their event made the fold no faster at all.
 */
import * as Schema from "effect/Schema"
import { HeldArtifact, PlacementDecided } from "../../domain/journal/Events.js"
import { unpackCandidates, unpackVerdicts } from "../../domain/journal/PlacementPacking.js"
import { fastGuardOf } from "../schema/Guard.js"

type Json = Record<string, unknown>

const { _tag, candidates: _candidates, ...otherFields } = PlacementDecided.fields
/** Every declared field but the candidates, checked as the full read checks them. */
const isRest = fastGuardOf(Schema.Struct(otherFields).ast)
const isStrings = fastGuardOf(Schema.Array(Schema.String).ast)
const isArtifacts = fastGuardOf(Schema.Array(HeldArtifact).ast)
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
 * The stored text each event not yet asked for its candidates makes them from. One getter for
 * all events, not a closure each: V8 keeps an accessor's function in the object's hidden class,
 * so a closure per event gave every event a hidden class of its own (the fold got slower, and
 * its collector busier, than making the candidates).
 */
const packedOf = new WeakMap<object, string>()
const CANDIDATES: PropertyDescriptor = {
  enumerable: true,
  configurable: true,
  get(this: object) {
    const value = unpackCandidates(JSON.parse(packedOf.get(this)!) as Json)
    packedOf.delete(this)
    Object.defineProperty(this, "candidates", { value, enumerable: true, configurable: true, writable: true })
    return value
  }
}

/**
 * The event a packed payload holds, its candidates made when first read; undefined when the
 * packed check refuses it (the full read then decides, and says what is wrong).
 */
export const readPackedPlacement = (payload: Json, text: string = JSON.stringify(payload)): PlacementDecided | undefined => {
  const { lists, artifacts, candidates } = payload
  if (!Array.isArray(lists) || !Array.isArray(artifacts) || !Array.isArray(candidates) || !rowsOk(lists, artifacts, candidates)) return undefined
  const fields: Json = {}
  for (const name of Object.keys(payload)) if (!TABLES.has(name)) fields[name] = payload[name]
  try {
    fields["verdicts"] = unpackVerdicts(payload, (i) => candidates[i] as ReadonlyArray<unknown> | undefined)
  } catch {
    return undefined
  }
  if (!isRest(fields)) return undefined
  // As the full read makes an event: an instance of the class, the declared fields in their
  // order, the tag last; the candidates an accessor that becomes a plain field when first read.
  const event = Object.create(PlacementDecided.prototype) as Record<string, unknown>
  for (const name of NAMES) {
    if (name === "candidates") {
      packedOf.set(event, text)
      Object.defineProperty(event, "candidates", CANDIDATES)
    } else if (name in fields) event[name] = fields[name]
  }
  event["_tag"] = "PlacementDecided"
  return event as unknown as PlacementDecided
}
