/** `svc workers leave`: stop working for an owner, telling it, and remove this machine's link to it. */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import type { Leave, WorkerResponse } from "../../../app/workers/Protocol.js"
import { parseJoinToken, secretKindOf } from "../../../domain/workers/Secrets.js"
import { adminCall } from "../../../infra/http/AdminApi.js"
import { SvcHome } from "../../../infra/SvcHome.js"
import { readLinks, removeLink, type StoredLink } from "../../../infra/workers/LinkStore.js"
import { followingCaller } from "../../../infra/workers/OwnerClient.js"
import { refused, usage } from "../../CliFailure.js"
import { json, printJson } from "../../output.js"

/** `https://host:7443/` and `host:7443` name the link to `https://host:7443`. */
const sameOwner = (given: string, url: string): boolean => {
  const plain = (u: string) => u.replace(/^https:\/\//, "").replace(/\/+$/, "")
  return plain(given) === plain(url)
}

const linkLine = (l: StoredLink) => `${l.url} as ${l.name} (${l.workerId})`

/**
 * Whether this machine's running svc serve has ended the link `key` (its work stopped): it ends a
 * removed link within 2 s, and stopping its jobs takes up to their 5 s grace. False when no
 * runtime answers (a killed one may have left jobs running; a stopped one answers nothing: each
 * call gives up after 3 s) or it has not within 15 s.
 */
const linkStopped = (home: string, key: string) =>
  Effect.gen(function* () {
    const deadline = Date.now() + 15_000
    for (;;) {
      // Each call bounded: a runtime stopped (SIGSTOP) or stuck answers nothing, and the command
      // waited for ever with the link already gone (it never told the owner).
      const answer = yield* Effect.either(Effect.tryPromise(() => adminCall(home, "GET", "/links", undefined, AbortSignal.timeout(Math.max(500, Math.min(3_000, deadline - Date.now()))))))
      if (answer._tag === "Left" || answer.right.status !== 200) return false
      const active = (answer.right.body as { readonly active?: unknown }).active
      if (!Array.isArray(active)) return false
      if (!active.includes(key)) return true
      if (Date.now() > deadline) return false
      yield* Effect.sleep("200 millis")
    }
  })

/**
 * Tells the owner this machine leaves it: with `running: []` when this machine's runtime has
 * stopped the link's work (the owner then frees the slots it held). An owner from before that
 * field (revision 2) refuses it, and a refusal changes nothing there: it is told again without
 * it, and revokes the worker all the same (the slots stay held until its operator releases them).
 */
export const tellLeaving = <E extends { readonly _tag: string; readonly code?: string }>(call: (request: Leave) => Effect.Effect<WorkerResponse, E>, stopped: boolean) =>
  stopped
    ? call({ kind: "leave", running: [] }).pipe(Effect.catchIf((e) => e._tag === "Refusal" && e.code === "bad-request", () => call({ kind: "leave" })))
    : call({ kind: "leave" })

export const leave = Command.make(
  "leave",
  { owner: Args.text({ name: "OWNER" }).pipe(Args.withDescription("the owner's URL (or host:port), or this machine's worker name or id there")), json },
  ({ json, owner }) =>
    Effect.gen(function* () {
      const home = (yield* SvcHome).path
      const links = yield* Effect.promise(() => readLinks(home))
      // A secret pasted where the owner belongs: said what it is, never repeated.
      const kind = secretKindOf(owner)
      if (kind !== undefined) {
        const token = kind === "join token" ? parseJoinToken(owner) : undefined
        return yield* usage(
          token !== undefined && typeof token !== "string"
            ? `that is a join token, not an owner; it names the owner at ${token.url}: svc workers leave ${token.url}`
            : `that is a ${kind} (${kind === "credential" ? "svc_wk_" : "svc_jt_"}…), not an owner: name the owner by its URL, or this machine's worker name or id there (svc workers status lists them)`
        )
      }
      const matching = links.filter(({ link }) => sameOwner(owner, link.url) || link.name === owner || link.workerId === owner)
      if (matching.length === 0)
        return yield* refused(
          links.length === 0 ? `this machine works for no owner: there is no link to leave` : `no link here is to ${owner}; this machine works for: ${links.map((l) => linkLine(l.link)).join("; ")}`,
          "not-found"
        )
      if (matching.length > 1) return yield* refused(`${owner} names ${matching.length} links: ${matching.map((l) => linkLine(l.link)).join("; ")}; name the one to leave by its owner's URL`)
      const { key, link } = matching[0]!
      // The link goes first (its credential is kept in memory for the call): a running svc serve
      // that hears of the revocation before it notices the link gone then knows this machine left.
      yield* Effect.tryPromise({ try: () => removeLink(home, key), catch: (e) => refused(`cannot remove the link to ${link.url}: ${e instanceof Error ? e.message : String(e)}; nothing changed: the owner was not told, and this machine still works for it`) })
      // A running svc serve ends the link within 2 s of its removal, stopping what it ran for that
      // owner: once it has, this machine can say it runs nothing there, and the owner frees the
      // slots those attempts held (it held them until its operator released them).
      const stopped = yield* linkStopped(home, key)
      // Then the owner is told: it revokes the worker, saying it left.
      // Following a change of the owner's certificate signed by the pinned one's key, as a link does.
      const caller = followingCaller({ url: link.url, fingerprint: link.fingerprint, certificate: link.certificate }, () => Effect.void)
      // Its log line of a change followed is the runtime's: a command does not print log lines (nor save the pin: the link is gone).
      const told = yield* Effect.either(tellLeaving((request) => caller.call(link.credential, request), stopped)).pipe(
        Logger.withMinimumLogLevel(LogLevel.None),
        Effect.ensuring(Effect.sync(() => caller.close()))
      )
      const released = told._tag === "Right" && told.right.kind === "left" ? told.right.released : undefined
      const outcome: { readonly kind: "told" } | { readonly kind: "revoked already" } | { readonly kind: "not told"; readonly why: string } =
        told._tag === "Right"
          ? { kind: "told" as const }
          : told.left._tag === "Refusal" && told.left.code === "revoked"
            ? { kind: "revoked already" as const }
            : { kind: "not told" as const, why: told.left.message }
      if (json) {
        yield* printJson({
          owner: link.url,
          workerId: link.workerId,
          name: link.name,
          ownerTold: outcome.kind !== "not told",
          ...(outcome.kind === "revoked already" ? { revokedAlready: true } : {}),
          ...(released === undefined ? {} : { released })
        })
      }
      else yield* Console.log(`left ${linkLine(link)}: its credential is deleted here, and a running svc serve ends that link within 2 s, stopping what it runs for that owner (a job that ignores SIGTERM is killed 5 s later)`)
      const again = "To work for it again, join with a new token."
      yield* Console.error(
        outcome.kind === "told" && released !== undefined
          ? `the owner was told: it lists ${link.name} as revoked (it left), and places again whatever ran here for it, stopped here first${released === 0 ? "" : `; the ${released === 1 ? "slot" : `${released} slots`} it held there ${released === 1 ? "is" : "are"} freed`}. ${again}`
          : outcome.kind === "told"
          ? `the owner was told: it lists ${link.name} as revoked (it left), and places again whatever ran here for it; slots such attempts held stay reserved there until its operator releases them (svc workers release ${link.workerId}), since no svc serve running here said it had stopped them. ${again}`
          : outcome.kind === "revoked already"
            ? // Refused, it freed nothing: what its attempts held there stays held until the owner hears they stopped, which this machine, its link gone, can no longer say.
              `the owner had revoked ${link.name} already, so it freed nothing: slots its attempts held there stay reserved until its operator releases them (svc workers release ${link.workerId}), since this machine, its link removed, can no longer say it stopped them. ${again}`
            : `the owner could not be told (${outcome.why}): it still lists ${link.name}, Offline once its advertisement lapses; attempts it had here are placed again. Its operator can revoke it: svc workers revoke ${link.workerId}. ${again}`
      )
    })
).pipe(Command.withDescription("Stop working for an owner: tell it (it revokes this worker) and remove this machine's link to it, its credential with it"))
