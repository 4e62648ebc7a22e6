/**
 * `svc workers status` (worker-protocol spec, "Command-line operations"): on an owner its workers
 * and invites not yet redeemed, on a worker the owners it works for, with states and reasons.
 */
import { existsSync } from "node:fs"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { pastRevocation } from "../../../app/runs/Candidates.js"
import type { PendingInvite, WorkerStatus } from "../../../app/workers/Owner.js"
import { neverWritten } from "../../../infra/journal/JournalReader.js"
import { storePath } from "../../../infra/journal/StoreFile.js"
import { SvcHome } from "../../../infra/SvcHome.js"
import { readLinkFiles, unreadableLinkText, type UnreadableLink } from "../../../infra/workers/LinkStore.js"
import { pendingJoins, type PendingJoinView } from "../../../infra/workers/PendingJoin.js"
import { admin } from "../../admin.js"
import { exitQuietly } from "../../CliFailure.js"
import { json, printJson, printLines, table } from "../../output.js"

/** What a person can do about a link that has ended (docs/protocol.md, "The worker's link"). */
const nextStep = (phase: string, url: string): string | undefined => {
  const again = `to work for it again, redeem a new invite from its operator (svc workers join TOKEN); to forget it: svc workers leave ${url}`
  switch (phase) {
    case "revoked":
      return `the owner's operator revoked this worker; ${again}`
    case "refused":
      return `the owner no longer accepts this link's credential; ${again}`
    case "fenced":
      return "another process with a copy of this link's credential took the session over (a copied $SVC_HOME?): keep one of them; restarting this one takes the session back"
    default:
      return undefined
  }
}

/** A link's status as `svc workers status` reads it from the runtime (fields an older runtime lacks are optional). */
export interface ServedStatus {
  readonly phase: string
  readonly detail: string
  readonly offer: {
    readonly capacity: number
    readonly labels: ReadonlyArray<string>
    readonly artifacts: ReadonlyArray<{ readonly address: string }>
    readonly withheld: ReadonlyArray<{ readonly job: string; readonly reason: string }>
  } | null
  readonly running?: number
  readonly busy?: number
  /** Attempts for this owner waiting for a slot, and over with their report not answered yet (a runtime from before these does not say). */
  readonly waiting?: number
  readonly reporting?: number
  readonly scope?: ReadonlyArray<string> | null
  /** A handed-over credential the link file could not take (a read-only or full disk). */
  readonly credentialNotSaved?: string
}

/**
 * On a worker, one owner it works for: the link's state, and while it is linked what it offers
 * that owner. The jobs it holds outside the scope that owner gave it are said apart: it
 * advertises what it holds, but that owner never places them on it.
 */
export const servedLines = (url: string, name: string, workerId: string, s: ServedStatus | null): ReadonlyArray<string> => {
  const lines = [`  ${url} as ${name} (${workerId}): ${s === null ? "not linked now" : `${s.phase}, ${s.detail}`}`]
  const next = s === null ? undefined : nextStep(s.phase, url)
  if (next !== undefined) lines.push(`    ${next}`)
  if (s?.credentialNotSaved !== undefined) lines.push(`    ${s.credentialNotSaved}: make the link file writable (it is saved as soon as it can be)`)
  // An ended link offers nothing any more: what it offered is not shown.
  if (s === null || s.offer === null || next !== undefined) return lines
  const scope = s.scope ?? []
  const inScope = s.offer.artifacts.filter((a) => scope.length === 0 || scope.includes(a.address)).map((a) => a.address)
  const outside = s.offer.artifacts.filter((a) => scope.length > 0 && !scope.includes(a.address)).map((a) => a.address)
  lines.push(`    offers ${s.offer.capacity} slot${s.offer.capacity === 1 ? "" : "s"}; labels ${s.offer.labels.join(",") || "none"}; jobs ${inScope.join(", ") || "none"}${scope.length > 0 ? ` (its scope there: ${scope.join(", ")})` : ""}`)
  if (outside.length > 0) lines.push(`    holds outside that scope (never placed here by this owner): ${outside.join(", ")}`)
  // Its slots are shared with every other owner and this machine's own runs (docs/runs.md, "On a worker").
  const running = s.running ?? 0
  const busy = s.busy ?? 0
  const waiting = s.waiting ?? 0
  const reporting = s.reporting ?? 0
  const also = [
    ...(waiting === 0 ? [] : [`${waiting} waiting for a slot`]),
    ...(reporting === 0 ? [] : [`${reporting} over, ${reporting === 1 ? "its report" : "their reports"} not answered yet`])
  ]
  lines.push(
    `    runs ${running} attempt(s) for it${also.length === 0 ? "" : ` (${also.join("; ")})`}; ${busy} of the ${s.offer.capacity === 1 ? "1 slot" : `${s.offer.capacity} slots`} held by other work (other owners, own runs)${running + busy >= s.offer.capacity ? ": no slot free for it now" : ""}`
  )
  for (const w of s.offer.withheld) lines.push(`    withholds ${w.job}: ${w.reason}`)
  return lines
}

/** LAST SEEN: when it last called this owner; a worker not heard from since the owner started is not "never" seen (an older owner does not say). */
export const lastSeenOf = (w: Pick<WorkerStatus, "lastSeen"> & { readonly everSeen?: boolean }): string =>
  w.lastSeen ?? (w.everSeen === true ? "not since start" : "never")

/**
 * USED/CAP; a revoked or Offline worker offers nothing (capacity 0), but may still hold slots
 * until they are released: `1 held`. This owner's attempts waiting there for a slot other work
 * holds: `2/2 +1 waiting`.
 */
export const usedOfCapacity = (w: Pick<WorkerStatus, "used" | "capacity" | "revoked"> & { readonly waiting?: number }): string =>
  w.revoked || w.capacity === 0 ? (w.used === 0 ? "-" : `${w.used} held`) : `${w.used}/${w.capacity}${(w.waiting ?? 0) > 0 ? ` +${w.waiting} waiting` : ""}`

/** Joins whose answer has not been kept here (docs/protocol.md, "A join whose answer never came"). */
export const pendingLines = (pending: ReadonlyArray<PendingJoinView>): ReadonlyArray<string> => [
  "joins whose answer never came here (run svc workers join again with the same token: the owner answers it again):",
  ...pending.map((p) => `  ${p.owner}, invite ${p.invite}, first tried ${p.since}${p.joiningNow ? "; a join runs in this SVC_HOME now" : ""}`)
]

/**
 * Identities revoked more than a day ago that hold no slot: what became of them is all they
 * show, and a machine that joins again each day would add a row a day for ever. The table leaves
 * them out unless `--all` (saying how many); `--json` lists every identity. The rule is placement's
 * own (app/runs/Candidates.ts, `pastRevocation`): it stops counting them at the same moment.
 */
type RevocationSeen = Pick<WorkerStatus, "revoked" | "used"> & { readonly revokedAt?: string | null }
const pastCounting = (w: RevocationSeen, now: number): boolean => w.revoked && w.revokedAt != null && pastRevocation(Date.parse(w.revokedAt), w.used, now)
export const pastRevocations = (workers: ReadonlyArray<RevocationSeen>, now: number): number => workers.filter((w) => pastCounting(w, now)).length

export const pastRevocationsLine = (n: number): string =>
  `${n} ${n === 1 ? "identity" : "identities"} revoked more than a day ago, holding no slot, not shown: svc workers status --all lists them, svc audit says when and by whom`

/**
 * The time the workers' times are judged by: the owner's, as it answered (its clock goes on from
 * where it was after a step back of the machine's, SteadyClock.ts); this command's own from an
 * owner before it said.
 */
export const ownerNow = (answer: Record<string, unknown> | undefined, own: number): number => {
  const said = typeof answer?.["now"] === "string" ? Date.parse(answer["now"]) : Number.NaN
  return Number.isFinite(said) ? said : own
}

/** Whether an owner has run in `home`: its journal is there, and was written to. */
const hasJournal = (home: string): boolean => existsSync(storePath(home)) && !neverWritten(storePath(home))

const all = Options.boolean("all").pipe(Options.withDescription("also list identities revoked more than a day ago that hold no slot (--json always lists every one)"))

export const status = Command.make("status", { json, all }, ({ json, all }) =>
  Effect.gen(function* () {
    const home = (yield* SvcHome).path
    const running = yield* Effect.either(admin("GET", "/workers"))
    if (running._tag === "Left" && running.left.exitCode === 1) return yield* running.left
    const workers = running._tag === "Right" ? (running.right["workers"] as ReadonlyArray<WorkerStatus>) : []
    const invites = running._tag === "Right" ? ((running.right["invites"] as ReadonlyArray<PendingInvite> | undefined) ?? []) : []
    const linksAnswer = running._tag === "Right" ? yield* admin("GET", "/links") : undefined
    const files = linksAnswer === undefined ? yield* Effect.promise(() => readLinkFiles(home)) : undefined
    const links = linksAnswer !== undefined
      ? (linksAnswer["links"] as ReadonlyArray<Record<string, unknown>>)
      : files!.links.map(({ key, link }) => ({ key, url: link.url, workerId: link.workerId, name: link.name, status: null }))
    // Link files that cannot be used (an owner from before this answer does not say: none).
    const unreadable = linksAnswer !== undefined ? ((linksAnswer["unreadable"] as ReadonlyArray<UnreadableLink> | undefined) ?? []) : files!.unreadable
    // Joins whose answer never came here (their keys are kept): run again, each is answered again.
    const pending = yield* Effect.promise(() => pendingJoins(home))
    // Asking the live runtime is the point: when it is not running, show what the files say, then exit 2.
    const notRunning = running._tag === "Left" ? exitQuietly(2) : undefined
    if (json) {
      // Not running: its workers and invites are not known here (null), not none ([] read as an empty fleet).
      const known = running._tag === "Right"
      yield* printJson({ runtime: known ? "running" : "not running", workers: known ? workers : null, invites: known ? invites : null, owners: links, unreadableLinks: unreadable, pendingJoins: pending })
      if (notRunning !== undefined) return yield* notRunning
      return
    }
    if (running._tag === "Left") {
      // An owner that has run here has a journal: its workers are its runtime's to show, and joining is not the way out.
      const owned = hasJournal(home)
      const more = [
        ...(owned ? ["its workers and invites are shown when it runs (svc audit lists from the journal who was invited, joined and revoked meanwhile)"] : []),
        links.length > 0 || unreadable.length > 0 ? "the links below are read from $SVC_HOME" : owned ? "this machine works for no owner" : "and this machine works for no owner (svc workers join TOKEN links it to one)"
      ]
      yield* Console.error(`svc: ${running.left.message}; ${more.join("; ")}`)
    }
    // A machine that only works for others has no workers of its own: say nothing about them.
    if (workers.length > 0 || (running._tag === "Right" && links.length === 0 && unreadable.length === 0)) {
      // Every installation is an owner, and may work for others: with neither, both ways out.
      yield* Console.log(
        workers.length === 0
          ? "workers: none linked, and this machine works for no owner; invite a worker with: svc workers invite (or link this machine to an owner: svc workers join TOKEN)"
          : "workers linked to this owner:"
      )
      if (workers.length > 0) {
        const now = ownerNow(running._tag === "Right" ? running.right : undefined, Date.now())
        const past = all ? 0 : pastRevocations(workers, now)
        const shown = past === 0 ? workers : workers.filter((w) => !pastCounting(w, now))
        if (shown.length > 0) {
          yield* printLines(
            table(
              ["NAME", "ID", "STATE", "USED/CAP", "LABELS", "CAPABILITIES", "SCOPE", "LAST SEEN", "WHY"],
              shown.map((w) => [w.name, w.id, w.state, usedOfCapacity(w), w.labels.join(",") || "-", w.capabilities.join(",") || "-", w.scope.join(",") || "all", lastSeenOf(w), w.reason])
            )
          )
        }
        if (past > 0) yield* Console.log(pastRevocationsLine(past))
      }
    }
    // Tokens that still work: what an operator may want to withdraw (svc workers revoke INVITE).
    if (invites.length > 0) {
      yield* Console.log("invites not yet redeemed (svc workers revoke INVITE withdraws one):")
      yield* printLines(
        table(
          ["INVITE", "NAME", "SCOPE", "MADE", "EXPIRES", "BY"],
          invites.map((i) => [i.id, i.name ?? "-", i.scope.join(",") || "all", i.invitedAt, i.expiresAt ?? "never", i.actor])
        )
      )
    }
    if (links.length > 0) {
      yield* Console.log("owners this machine works for:")
      for (const l of links) {
        yield* printLines(servedLines(String(l["url"]), String(l["name"]), String(l["workerId"]), l["status"] as ServedStatus | null))
      }
    }
    for (const u of unreadable) yield* Console.log(`link file ${unreadableLinkText(u)}`)
    if (pending.length > 0) yield* printLines(pendingLines(pending))
    if (notRunning !== undefined) return yield* notRunning
  })
).pipe(Command.withDescription("List workers (on an owner) and owners served (on a worker), with states and reasons"))
