/**
 * Reading events stored under an older schema version as the current one. A shipped event is
 * never changed incompatibly; instead its version is bumped and an upcaster here turns each
 * older payload into the next version's, step by step, before decoding.
 */
import { CURRENT_VERSION, type EventType } from "./Events.js"
import { packPlacement, unpackPlacement } from "./PlacementPacking.js"

type Payload = Record<string, unknown>
type Upcaster = (payload: Payload) => Payload

/** `UPCASTERS[type][v]` turns version v into version v + 1. */
const UPCASTERS: { readonly [K in EventType]?: Readonly<Record<number, Upcaster>> } = {
  WorkerJoined: {
    // v1 had no link to an earlier identity: every v1 join was a first join.
    1: (p) => ({ ...p, replaces: null }),
    // v2 had no join key: a join from before it cannot be answered again.
    2: (p) => ({ ...p, joinKeyHash: null })
  },
  RunSubmitted: {
    // v1 had no idempotency key: no run submitted then had one (a v1 reader would have dropped it).
    1: (p) => p
  },
  WorkerAdvertised: {
    // v1 stored labels as a map {os: linux}; v2 as sorted KEY=VALUE strings, as advertised.
    1: (p) => {
      const labels = p["labels"]
      return {
        ...p,
        labels:
          typeof labels === "object" && labels !== null && !Array.isArray(labels)
            ? Object.entries(labels as Record<string, unknown>)
                .map(([k, v]) => `${k}=${String(v)}`)
                .sort()
            : labels
      }
    }
  }
}

/**
 * Events whose current stored layout is packed (a version that changes how the fields are
 * stored, not what they are): written packed, read back as the same fields. The versions
 * before it are already the event's fields.
 */
const PACKED: { readonly [K in EventType]?: { readonly since: number; readonly pack: Upcaster; readonly unpack: Upcaster } } = {
  // v2: each distinct list and exclusion record once (PlacementPacking.ts). v3, the same layout,
  // may carry why a candidate's advertisement is not alive (its flags' silence bits): a v2 reader
  // would drop them without a word and misread the decision, so they raised the version (a
  // reader refuses a version newer than it knows). A v2 payload reads as v3 with no silence.
  // v4, the same layout again, may carry the placement rules' revision in its activity (`rules`):
  // a v3 reader would drop it and audit a decision by revision 2 as one by revision 1. A v2 or
  // v3 payload reads as v4 without it (revision 1). v5, the same layout, may carry the silence
  // `hello` (flag 64: a worker that said hello and has not advertised since), which a v4 reader
  // would read as a lapse; a v4 payload reads as v5 as it is.
  PlacementDecided: { since: 2, pack: packPlacement, unpack: unpackPlacement }
}

/**
 * A `PlacementDecided` payload stored at `version`: before v4 its activity's `rules` is left out
 * (revision 1), whatever a row edited since says; one read as it said would choose the rules the
 * decision is judged by. Every reader of stored decisions goes through it.
 */
export const decisionAsStored = (version: number, fields: Payload): Payload => {
  const activity = fields["activity"]
  if (version >= 4 || typeof activity !== "object" || activity === null || !("rules" in activity)) return fields
  const { rules: _, ...rest } = activity as Record<string, unknown>
  return { ...fields, activity: rest }
}

/** Whether `type` stored at `version` is in its packed layout. */
export const isPackedVersion = (type: EventType, version: number): boolean => {
  const packed = PACKED[type]
  return packed !== undefined && version >= packed.since && version <= CURRENT_VERSION[type]
}

/** The payload to store for an event of `type` (its fields, without the tag), at CURRENT_VERSION. */
export const storedPayload = (type: EventType, fields: Payload): Payload => {
  const packed = PACKED[type]
  return packed === undefined ? fields : packed.pack(fields)
}

export class UnknownEventVersion extends Error {
  constructor(
    readonly type: string,
    readonly version: number
  ) {
    super(`event ${type} version ${version} is newer than this svc understands (at most ${CURRENT_VERSION[type as EventType] ?? "none"})`)
  }
}

/** The payload of `type` stored at `version`, brought to the current version. */
export const upcast = (type: EventType, version: number, payload: Payload): Payload => {
  const current = CURRENT_VERSION[type]
  if (version > current || version < 1) throw new UnknownEventVersion(type, version)
  const packed = PACKED[type]
  if (packed !== undefined && version >= packed.since) {
    const fields = packed.unpack(payload)
    // A decision stored before v4 was made before rules had revisions: revision 1, whatever a row
    // edited since says (read as it said, an edited `rules` would choose the rules it is judged by).
    return type === "PlacementDecided" ? decisionAsStored(version, fields) : fields
  }
  let out = payload
  for (let v = version; v < current; v++) {
    // The step to a packed layout is one of storage only: the version before it is the fields.
    if (packed !== undefined && v + 1 === packed.since) break
    const step = UPCASTERS[type]?.[v]
    if (step === undefined) throw new UnknownEventVersion(type, v)
    out = step(out)
  }
  return out
}
