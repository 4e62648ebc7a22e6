/**
 * The forms an event is printed in: one line of text (tail), or its envelope as JSON (tail
 * --json, export, history's fields); a row that cannot be read, as stored with why.
 */
import * as Schema from "effect/Schema"
import { Event, type Envelope, type PlacementDecided } from "../../../domain/journal/Events.js"
import { explain } from "../../../domain/placement/Placement.js"
import { isUnreadable, type Read, type Unreadable } from "./unreadable.js"

export const encodeEvent = Schema.encodeSync(Event)
const envelopeJson = (e: Envelope) => ({
  sequence: e.sequence,
  stream: e.stream,
  streamVersion: e.streamVersion,
  type: e.type,
  schemaVersion: e.schemaVersion,
  recordedAt: new Date(e.recordedAt).toISOString(),
  event: encodeEvent(e.event)
})
/**
 * A placement decision read as `runs show` explains it, at most three excluded hosts named: its
 * every input (activity, each candidate as seen, quotas) made lines of thousands of characters.
 * `--json` and `svc journal export` keep all of it.
 */
const placementText = (d: PlacementDecided): string =>
  `${d.runId}${d.attempt === null ? "" : ` attempt ${d.attempt}`}: ${explain(d, 3)} (${d.candidates.length} candidate${d.candidates.length === 1 ? "" : "s"}; every input: --json)`

const envelopeLine = (e: Envelope) => {
  const head = `${String(e.sequence).padStart(8)}  ${new Date(e.recordedAt).toISOString()}  ${e.stream}#${e.streamVersion}  ${e.type}`
  if (e.event._tag === "PlacementDecided") return `${head}  ${placementText(e.event)}`
  const { _tag, ...fields } = encodeEvent(e.event) as { _tag: string } & Record<string, unknown>
  return `${head}  ${JSON.stringify(fields)}`
}

const timeOf = (at: number) => (Number.isFinite(at) && Math.abs(at) <= 8.64e15 ? new Date(at).toISOString() : at)
/** A row that cannot be read, as stored (the payload as its text), with why. */
const unreadableJson = ({ row, unreadable: e }: Unreadable) => ({
  sequence: row.sequence,
  stream: row.stream,
  streamVersion: row.streamVersion,
  type: row.type,
  schemaVersion: row.schemaVersion,
  recordedAt: timeOf(row.recordedAt),
  payload: row.payload,
  unreadable: e.message
})
export const readJson = (r: Read) => (isUnreadable(r) ? unreadableJson(r) : envelopeJson(r))
/** As `envelopeLine`, why in place of the fields (`--json` and `svc journal export` give the payload as stored). */
export const readLine = (r: Read) => {
  if (!isUnreadable(r)) return envelopeLine(r)
  const { row } = r
  const why = r.unreadable.message.replace(/^the event at sequence \d+ \([^)]*\) cannot be read: /, "")
  return `${String(row.sequence).padStart(8)}  ${timeOf(row.recordedAt)}  ${row.stream}#${row.streamVersion}  ${row.type}  cannot be read: ${why}`
}
