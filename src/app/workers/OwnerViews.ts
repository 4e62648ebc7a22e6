/**
 * What the owner shows of its workers and invites (`svc workers status`): pure functions of the
 * projections, the freshness of each worker's calls (runtime state, never journaled) and the
 * time; display states are computed here, at query time (docs/protocol.md, "Display states").
 */
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import type { OwnerState } from "../../domain/journal/OwnerState.js"
import { inviteExpired } from "../../domain/workers/Decide.js"
import { advertisementAlive, displayState, heardAt, waitingThere, type DisplayState, type Freshness } from "../../domain/workers/DisplayState.js"
import { leftActor } from "../../domain/workers/Audit.js"
import type { Registry, WorkerRecord } from "../../domain/workers/Registry.js"

export interface WorkerStatus {
  readonly id: string
  readonly name: string
  readonly state: DisplayState
  readonly reason: string
  readonly capacity: number
  /**
   * Slots in use: this owner's attempts, and `elsewhere`; never more than it offers (when it
   * offers anything): the attempts beyond are `waiting`.
   */
  readonly used: number
  /** This owner's attempts placed there that wait for a slot: other work holds the rest (0 otherwise). */
  readonly waiting: number
  /** Slots the worker's last advertisement said other work holds (other owners, its own runs). */
  readonly elsewhere: number
  readonly free: number
  readonly labels: ReadonlyArray<string>
  readonly capabilities: ReadonlyArray<string>
  readonly artifacts: ReadonlyArray<{ readonly address: string; readonly digest: string; readonly inScope: boolean }>
  readonly scope: ReadonlyArray<string>
  readonly lastSeen: string | null
  /** It has said hello at some time (a session was journaled), seen since this owner started or not. */
  readonly everSeen: boolean
  readonly revoked: boolean
  /** When it was revoked (ISO 8601); null while it is not. */
  readonly revokedAt: string | null
  /** Who revoked it (the audit's actor: `operator NAME`, or the worker itself as it left or joined again); null while it is not. */
  readonly revokedBy: string | null
  readonly rotationPending: boolean
}

/** An invite not yet redeemed, revoked nor expired: its token still works. */
export interface PendingInvite {
  readonly id: string
  readonly name: string | null
  readonly scope: ReadonlyArray<string>
  readonly invitedAt: string
  /** null: it never expires (an unscoped invite given no expiry). */
  readonly expiresAt: string | null
  readonly actor: string
}

/**
 * The owner's digest of each job address its workers hold: null when the owner does not hold
 * that job; an address left out is not known (its bag could not be read).
 */
export type OwnerJobs = ReadonlyMap<string, string | null>

/**
 * Why a worker whose advertisement offers jobs can run none of this owner's: no job in its scope
 * that it holds is one the owner holds with the same digest, and some it holds the owner holds
 * with another (fleet audit: such a worker was shown Ready, "1 of 1 slots free", while every run
 * excluded it). Undefined when one of them matches, when one is not known, or when the owner holds
 * none of them at all (it has nothing to run there yet, whatever the worker holds: its own setup,
 * not the worker's, and said when a run is submitted).
 */
export const noneOfOwners = (held: ReadonlyArray<{ readonly address: string; readonly digest: string; readonly inScope: boolean }>, owner: OwnerJobs): string | undefined => {
  const runnable = held.filter((a) => a.inScope)
  if (runnable.length === 0) return undefined
  const why: Array<string> = []
  for (const a of runnable) {
    if (!owner.has(a.address)) return undefined
    const digest = owner.get(a.address)
    if (digest === a.digest) return undefined
    why.push(digest === null ? `${a.address} is not installed on this owner` : `it holds ${a.address} with another digest`)
  }
  if (runnable.every((a) => owner.get(a.address) === null)) return undefined
  const shown = why.slice(0, 3).join(", ") + (why.length > 3 ? ` and ${why.length - 3} more` : "")
  return `it holds none of this owner's jobs as installed here (${shown}): install the same bags on both (svc bag install), so that their digests agree`
}

/** Every worker, revoked identities last (they only ever show what became of them), by name. */
export const workerStatuses = (
  state: OwnerState,
  freshness: (workerId: string) => Freshness | undefined,
  now: number,
  /** The owner's own jobs, when known (an owner with runs): a worker that can run none of them is said to need setup. */
  ownerJobs?: OwnerJobs
): ReadonlyArray<WorkerStatus> => {
  const { registry: r, ledger } = state
  // A revoked identity whose installation joined again: the identity that replaced it.
  const replacedBy = new Map<string, string>()
  for (const w of HashMap.values(r.workers)) if (w.replaces !== null) replacedBy.set(w.replaces, w.id)
  // Who revoked each revoked worker, as its audit row says (the projection keeps only when).
  const revokedBy = new Map<string, string>()
  for (const row of state.audit) if (row.kind === "revocation" && row.workerId !== null) revokedBy.set(row.workerId, row.actor)
  const revokedLast = (w: WorkerRecord) => (w.revokedAt === null ? 0 : 1)
  return [...HashMap.values(r.workers)]
    .sort((a, b) => revokedLast(a) - revokedLast(b) || a.name.localeCompare(b.name) || a.id.localeCompare(b.id))
    .map((w): WorkerStatus => {
      const f = freshness(w.id)
      // What other work holds there is known only while it advertises: a revoked or silent
      // worker's last word on it is stale, and its slots are none of this owner's.
      const offering = w.revokedAt === null && advertisementAlive(f, now)
      const elsewhere = offering ? (f?.busy ?? 0) : 0
      const ours = Option.match(HashMap.get(ledger.physical, w.id), { onNone: () => 0, onSome: (p) => p.reserved })
      const artifacts = (w.advertisement?.artifacts ?? []).map((a) => ({ ...a, inScope: w.scope.length === 0 || w.scope.includes(a.address) }))
      const displayed = displayState(w, f, ours + elsewhere, now)
      const none = displayed.state === "Ready" && ownerJobs !== undefined ? noneOfOwners(artifacts, ownerJobs) : undefined
      const shown = none === undefined ? displayed : { state: "Needs setup" as const, reason: none }
      const successor = replacedBy.get(w.id)
      const heard = heardAt(f)
      const by = w.revokedAt === null ? null : (revokedBy.get(w.id) ?? null)
      const said =
        successor !== undefined
          ? { ...shown, reason: `${shown.reason}; its installation joined again as ${successor}` }
          : by === leftActor(w.id)
            ? { ...shown, reason: "it left (svc workers leave on its machine): its calls are refused" }
            : by !== null
              ? { ...shown, reason: `revoked by ${by}: its calls are refused` }
              : shown
      // Slots a revoked identity still holds stay held until its machine says what it runs (a hello
      // after joining again); the way to free them by hand is said where they show (audit: nothing did).
      const display = w.revokedAt !== null && ours > 0 && successor === undefined
        ? { ...said, reason: `${said.reason}; its ${ours} held slot${ours === 1 ? "" : "s"} stay${ours === 1 ? "s" : ""} held until its machine joins again, or svc workers release ${w.id} frees ${ours === 1 ? "it" : "them"} once its jobs are known to have stopped` }
        : said
      // A revoked worker offers nothing, whatever it last advertised.
      const capacity = offering && w.advertisement !== null ? w.advertisement.capacity : 0
      // Offering nothing (revoked, Offline), it holds what its attempts held: all shown as used.
      const waiting = capacity === 0 ? 0 : waitingThere(ours, elsewhere, capacity)
      const used = ours + elsewhere - waiting
      return {
        id: w.id,
        name: w.name,
        state: display.state,
        reason: display.reason,
        capacity,
        used,
        waiting,
        elsewhere,
        free: Math.max(0, capacity - used),
        labels: w.advertisement?.labels ?? [],
        capabilities: w.advertisement?.capabilities ?? [],
        artifacts,
        scope: w.scope,
        // When it was heard, not the time moved on past this owner's own pause (Freshness.awake).
        lastSeen: heard === null ? null : new Date(heard).toISOString(),
        everSeen: w.fence > 0,
        revoked: w.revokedAt !== null,
        revokedAt: w.revokedAt === null ? null : new Date(w.revokedAt).toISOString(),
        revokedBy: by,
        rotationPending: w.rotationPending
      }
    })
}

/** The invites whose tokens can still be redeemed at `now`, oldest first (then by id, in code-unit order). */
export const pendingInvitesOf = (r: Registry, now: number): ReadonlyArray<PendingInvite> =>
  [...HashMap.values(r.invites)]
    .filter((i) => i.redeemedBy === null && i.revokedAt === undefined && !inviteExpired(i, now))
    .sort((a, b) => a.invitedAt - b.invitedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map(
      (i): PendingInvite => ({
        id: i.id,
        name: i.name,
        scope: i.scope,
        invitedAt: new Date(i.invitedAt).toISOString(),
        expiresAt: i.expiresAt === null ? null : new Date(i.expiresAt).toISOString(),
        actor: i.actor
      })
    )
