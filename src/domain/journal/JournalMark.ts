/**
 * The journal's mark (docs/operations.md, "Restoring a backup"): what the owner keeps beside its
 * journal, outside it, of how far the journal went and of what must never be undone: which
 * workers were revoked, which credentials replaced, which invites spent. An older copy of the
 * journal put in its place (a backup restored) brings back what was revoked, replaced and spent
 * after the copy was made: a revoked worker linked again at its next restart, a redeemed token
 * worked again, and nothing said so. With the mark, a start tells that the journal went back,
 * and, told to go on from it, revokes again what the mark says was closed. Pure: the runtime
 * reads and writes it.
 */
import * as HashMap from "effect/HashMap"
import type { Registry } from "../workers/Registry.js"

/** The event at the mark's sequence: a journal of as many events, but another one, is not taken for this one. */
export interface Anchor {
  readonly stream: string
  readonly streamVersion: number
  readonly type: string
}

export interface JournalMark {
  readonly sequence: number
  readonly anchor: Anchor | null
  /** Workers revoked. */
  readonly revoked: ReadonlyArray<string>
  /** Each worker not revoked: the first 16 hex digits of its current credential's hash (a rotation changes it). */
  readonly credentials: Readonly<Record<string, string>>
  /** Invites redeemed or revoked: their tokens work no more. */
  readonly spent: ReadonlyArray<string>
}

/** The mark of a journal at `sequence`, its registry as folded there. */
export const markOf = (sequence: number, anchor: Anchor | null, registry: Registry): JournalMark => {
  const revoked: Array<string> = []
  const credentials: Record<string, string> = {}
  for (const w of HashMap.values(registry.workers)) {
    if (w.revokedAt !== null) revoked.push(w.id)
    else if (w.credentials[0] !== undefined) credentials[w.id] = w.credentials[0].hash.slice(0, 16)
  }
  const spent = [...HashMap.values(registry.invites)].filter((i) => i.redeemedBy !== null || i.revokedAt !== undefined).map((i) => i.id)
  return { sequence, anchor, revoked: revoked.sort(), credentials, spent: spent.sort() }
}

/** Whether a mark says anything the journal at hand must keep: a change worth writing it again for. */
export const sameGuard = (a: JournalMark, b: JournalMark): boolean =>
  a.revoked.length === b.revoked.length &&
  a.spent.length === b.spent.length &&
  Object.keys(a.credentials).length === Object.keys(b.credentials).length &&
  Object.entries(a.credentials).every(([id, hash]) => b.credentials[id] === hash)

/** How the journal at hand went back from the one the mark was written of; undefined when it did not. */
export type WentBack = { readonly kind: "shorter"; readonly missing: number } | { readonly kind: "another"; readonly at: Anchor | null }

/** `sequence`: the journal's last; `anchorNow`: its event at the mark's sequence (null when it has none). */
export const wentBack = (mark: JournalMark, sequence: number, anchorNow: Anchor | null): WentBack | undefined => {
  if (sequence < mark.sequence) return { kind: "shorter", missing: mark.sequence - sequence }
  if (mark.anchor === null) return undefined
  const same = anchorNow !== null && anchorNow.stream === mark.anchor.stream && anchorNow.streamVersion === mark.anchor.streamVersion && anchorNow.type === mark.anchor.type
  return same ? undefined : { kind: "another", at: anchorNow }
}

/** What to close again on a journal that went back: workers to revoke (revoked or given a new credential since), invites to revoke. */
export interface Reclose {
  readonly workers: ReadonlyArray<{ readonly id: string; readonly why: "revoked" | "credential replaced" }>
  readonly invites: ReadonlyArray<string>
}

export const toReclose = (mark: JournalMark, registry: Registry): Reclose => {
  const workers: Array<{ readonly id: string; readonly why: "revoked" | "credential replaced" }> = []
  for (const w of HashMap.values(registry.workers)) {
    if (w.revokedAt !== null) continue
    if (mark.revoked.includes(w.id)) workers.push({ id: w.id, why: "revoked" })
    else {
      const then = mark.credentials[w.id]
      // A credential replaced after the copy was made: the older one (maybe leaked, the reason to
      // rotate) works again in this journal, and the worker holds one it does not know.
      if (then !== undefined && w.credentials[0] !== undefined && w.credentials[0].hash.slice(0, 16) !== then) workers.push({ id: w.id, why: "credential replaced" })
    }
  }
  const invites = [...HashMap.values(registry.invites)].filter((i) => i.redeemedBy === null && i.revokedAt === undefined && mark.spent.includes(i.id)).map((i) => i.id)
  return { workers: workers.sort((a, b) => a.id.localeCompare(b.id)), invites: invites.sort() }
}
