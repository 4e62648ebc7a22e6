/** `svc workers join` (worker-protocol spec, "Command-line operations"): redeem a join token, linking this machine to the owner as a worker. */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { workerNameFromHost } from "../../../domain/workers/Decide.js"
import { workerNameShapeProblem } from "../../../domain/workers/Invite.js"
import { parseJoinToken, type JoinTokenContent } from "../../../domain/workers/Secrets.js"
import { SvcHome } from "../../../infra/SvcHome.js"
import { linkKey, linksDir, readLinks, removeLink, writeLink, type StoredLink } from "../../../infra/workers/LinkStore.js"
import { Unreachable } from "../../../app/workers/Link.js"
import { callOwner, fetchPinnedCertificate, makeAgent } from "../../../infra/workers/OwnerClient.js"
import { JoinBusy, pendingJoin, type PendingJoin } from "../../../infra/workers/PendingJoin.js"
import { ownFingerprints } from "../../../infra/tls/OwnerCertificate.js"
import { currentUid } from "../../../infra/PrivateFiles.js"
import { unsafeHomeProblem } from "../../../infra/runtime/HomeStart.js"
import { refused, setupProblem, unreachable, usage } from "../../CliFailure.js"
import { ctrlCLatch } from "../../ctrlC.js"
import { json, printJson } from "../../output.js"
import { onlyThisMachine } from "./loopback.js"

/** Everything on stdin (at most 64 KiB: a token is some 200 characters). */
const readStdin = async (): Promise<string> => {
  let text = ""
  process.stdin.setEncoding("utf8")
  for await (const chunk of process.stdin) {
    text += chunk as string
    if (text.length > 65_536) break
  }
  return text
}

/**
 * A join that failed before it was sent (nothing answered at all, or a certificate other than the
 * pinned one, or the pinned one out of its validity: the connection is refused before a request
 * is written on it, OwnerClient.ts): the token is still good.
 */
const notSent = (message: string): boolean => /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN/.test(message) || pinRefused(message)
const pinRefused = (message: string): boolean => /the one this worker pins|another certificate than the one pinned/.test(message)

/** An owner still starting (reading its journal) answers every call 503 and records nothing. */
const starting = (message: string): boolean => /\banswered 503\b/.test(message)

/** A join this call did not get recorded: not sent, or answered by an owner still starting. */
const nothingRecorded = (message: string): boolean => notSent(message) || starting(message)

/**
 * A join sent whose answer never came (the connection broke, or no answer in time): the owner
 * may have recorded it, spending the token. Its join key is kept, so the same join run again is
 * answered again with a new credential (an owner before protocol revision 5 cannot: `keyless`).
 * The network audit found "cannot reach the owner" said then, and a second try refused as
 * redeemed with nothing to explain it.
 */
export const joinUnanswered = (message: string, url: string, keyless: boolean): string =>
  `the join was sent to ${url}, but its answer never came (${message.startsWith(`${url}: `) ? message.slice(url.length + 2) : message}): the owner may have recorded it. ` +
  (keyless
    ? "Run svc workers join again with the same token: if it says the token was already redeemed, the owner recorded the join and the worker it made holds a credential nobody has (this owner's svc is too old to answer a join again): ask the owner's operator to revoke it (svc workers status there shows it Needs setup) and to invite this machine again"
    : "Run svc workers join again with the same token, from this machine and SVC_HOME: the owner answers it again (this machine kept the join's key)")

/** An owner before protocol revision 5 refuses a join's `joinKey` as a field it does not know (and records nothing). */
const joinKeyUnknown = (e: { readonly _tag: string; readonly code?: string; readonly message: string }): boolean =>
  e._tag === "Refusal" && e.code === "bad-request" && /\bjoinKey\b.*\bis unexpected\b/.test(e.message)

/**
 * A token refused as redeemed, run again on a machine linked to that owner already: what the
 * link is (the docs audit ran a join again "to be sure" and was told to ask for a new token, which
 * would make a second identity). Undefined when this machine has no link there.
 */
export const alreadyLinked = (
  e: { readonly code?: string; readonly message: string },
  earlier: { readonly link: StoredLink } | undefined,
  content: JoinTokenContent,
  home: string
): string | undefined => {
  if (e.code !== "join-refused" || !/^this join token was already redeemed\b/.test(e.message) || earlier === undefined) return undefined
  const { link } = earlier
  // Whether that link still works is the runtime's to say (a revoked one is not known here).
  const works = "svc workers status shows whether it still works (a new token from the owner's operator is needed only if it does not)"
  return link.inviteId === content.inviteId
    ? `this machine redeemed this token already: it is linked to ${content.url} as ${link.name} (${link.workerId}), its link in ${linksDir(home)}; ${works}`
    : `this join token was redeemed already, and this machine is linked to that owner ${link.inviteId === undefined ? "" : "by another token "}as ${link.name} (${link.workerId}); ${works}`
}

/**
 * The link this machine already has to the owner a token is from, whose credential it may send as
 * the proof of being that worker: one pinned to the token's certificate, at its address or at
 * another (the owner moved: a new port, `--public-url`, host name). The token's certificate is
 * the one the join checks the server against, so that credential goes to the owner it belongs to.
 * Where a new address made a second identity beside the first, joining again is now recognised
 * (docs/protocol.md, "Joining again").
 */
export const sameOwner = <L extends { readonly key: string; readonly link: Pick<StoredLink, "url" | "fingerprint" | "joinedAt"> }>(links: ReadonlyArray<L>, content: Pick<JoinTokenContent, "url" | "fingerprint">): L | undefined =>
  links.find((l) => l.key === linkKey(content.url, content.fingerprint)) ?? latest(links.filter((l) => l.link.fingerprint === content.fingerprint))

/**
 * The links at the token's address pinned to other certificates: whatever answers there now is
 * not what they pinned (an owner that made itself a certificate it did not sign a change to, or
 * another owner in its place), and they would try it for good. Their credentials are never sent:
 * the server was not shown to be the owner they belong to.
 */
export const sameAddress = <L extends { readonly key: string; readonly link: Pick<StoredLink, "url" | "fingerprint"> }>(links: ReadonlyArray<L>, content: Pick<JoinTokenContent, "url" | "fingerprint">, except: L | undefined): ReadonlyArray<L> =>
  links.filter((l) => l !== except && l.link.url === content.url && l.link.fingerprint !== content.fingerprint)

const latest = <L extends { readonly link: Pick<StoredLink, "joinedAt"> }>(matching: ReadonlyArray<L>): L | undefined => [...matching].sort((a, b) => b.link.joinedAt.localeCompare(a.link.joinedAt))[0]

/** What `join` does once it holds this join's key: send the join, keep the link, say what happened. */
const redeem = ({
  bearer,
  certificate,
  content,
  home,
  json,
  loopback,
  name,
  pending
}: {
  readonly bearer: string
  readonly certificate: string
  readonly content: JoinTokenContent
  readonly home: string
  readonly json: boolean
  readonly loopback: string
  readonly name: Option.Option<string>
  readonly pending: PendingJoin
}) =>
  Effect.gen(function* () {
    const pinned = { url: content.url, fingerprint: content.fingerprint, certificate }
    const agent = makeAgent(pinned)
    // Joining the same owner again: the earlier identity's credential proves this is the same
    // installation, so the owner can release the slots that identity still holds (docs/runs.md).
    const links = yield* Effect.promise(() => readLinks(home))
    const earlier = sameOwner(links, content)
    const stale = sameAddress(links, content, earlier)
    const request = {
      kind: "join" as const,
      // Joining again keeps the name it had there (the operator's commands and scripts use it), unless --name says otherwise.
      name: Option.getOrElse(name, () => earlier?.link.name ?? workerNameFromHost(os.hostname())),
      ...(earlier === undefined ? {} : { previousCredential: earlier.link.credential })
    }
    let keyless = false
    // Ctrl-C while the answer is awaited: the join may be recorded, and the key is kept for the next try.
    const ctrlC = yield* ctrlCLatch
    const interrupted = Effect.zipRight(ctrlC, Effect.fail(new Unreachable({ message: "interrupted (Ctrl-C) before it came" })))
    const answer = yield* callOwner(pinned, agent, bearer, { ...request, joinKey: pending.key }).pipe(
      // An owner before revision 5 refused the key and recorded nothing: the join again, without it.
      Effect.catchIf(joinKeyUnknown, () => Effect.sync(() => (keyless = true)).pipe(Effect.zipRight(callOwner(pinned, agent, bearer, request)))),
      Effect.raceFirst(interrupted),
      Effect.tapError((e) =>
        // The owner answered, and did not answer the join (again), the owner cannot use the key,
        // or nothing was recorded on a first try (nothing answered, or an owner starting): the key
        // is of no more use. Kept after a join that may have been recorded (now or on an earlier
        // try), and after a refusal to try again later.
        keyless || (e._tag === "Refusal" && e.code !== "unavailable") || (e._tag === "Unreachable" && nothingRecorded(e.message) && !pending.again)
          ? Effect.promise(() => pending.forget())
          : Effect.void
      ),
      Effect.mapError((e) =>
        e._tag === "Refusal"
          ? refused(alreadyLinked(e, earlier, content, home) ?? `the owner refused: ${e.message}`)
          : pinRefused(e.message)
            ? unreachable(`${e.message}; nothing was sent to the owner (the connection was refused before the join), so this try did not spend the token`)
            : notSent(e.message)
            ? unreachable(`cannot reach the owner: ${e.message}${loopback}`)
            : starting(e.message)
              ? unreachable(`the owner cannot take a join yet (${e.message}): nothing was recorded; run svc workers join again in a moment`)
              : unreachable(joinUnanswered(e.message, content.url, keyless))
      ),
      Effect.ensuring(Effect.sync(() => agent.destroy()))
    )
    if (answer.kind !== "joined") return yield* refused(`the owner answered ${answer.kind} to join`)
    yield* Effect.tryPromise({
      try: () =>
        writeLink(home, {
          url: content.url,
          fingerprint: content.fingerprint,
          certificate,
          workerId: answer.workerId,
          name: answer.name,
          credential: answer.credential,
          joinedAt: new Date().toISOString(),
          inviteId: content.inviteId
        }),
      catch: (e) =>
        refused(
          `joined ${content.url} as ${answer.name} (${answer.workerId}), but its link could not be written to ${linksDir(home)} (${e instanceof Error ? e.message : String(e)}), and its credential with it: ` +
            (keyless
              ? `ask the owner's operator to revoke ${answer.workerId} and invite this machine again`
              : "once it can be written, run svc workers join again with the same token: the owner answers it again (this machine kept the join's key)")
        )
    })
    // The link it replaces at another address (the owner moved): removed, so that a running svc
    // serve ends it and stops what it ran there; it tried that address for good, beside the new
    // link, and ran the owner's work twice. And links at this address pinned to another
    // certificate, which whatever answers there is not: removed too, their credentials unsent.
    const moved = earlier !== undefined && earlier.key !== linkKey(content.url, content.fingerprint) ? [earlier] : []
    for (const old of [...moved, ...stale]) {
      yield* Effect.tryPromise(() => removeLink(home, old.key)).pipe(
        Effect.zipRight(
          old === earlier
            ? Effect.void
            : Console.error(
                `note: the earlier link to ${old.link.url} as ${old.link.name} (${old.link.workerId}), pinned to another certificate, was removed: what answers there is not the owner it pinned; its identity there was not told (revoke it there if that owner still runs: svc workers revoke ${old.link.workerId})`
              )
        ),
        Effect.catchAll((e) =>
          Console.error(`note: the earlier link to ${old.link.url} as ${old.link.name} could not be removed (${e.error instanceof Error ? e.error.message : String(e.error)}): svc workers leave ${old.link.workerId} removes it`)
        )
      )
    }
    yield* Effect.promise(() => pending.forget())
    if (answer.answeredAgain === true) yield* Console.error(`note: the owner answered this join again (its first answer never arrived here); the credential it carried no longer works`)
    // The invite's name wins over --name (the operator chose it): say so rather than drop it silently.
    // A join answered again keeps the worker its first answer made, named then.
    const nameUnused =
      Option.isSome(name) && name.value !== answer.name
        ? answer.answeredAgain === true
          ? `the worker keeps the name it was given at the join answered again, ${answer.name}; --name ${name.value} was not used`
          : `the invite names this worker ${answer.name}; --name ${name.value} was not used`
        : undefined
    if (nameUnused !== undefined) yield* Console.error(`note: ${nameUnused}`)
    if (json) return yield* printJson({ owner: content.url, workerId: answer.workerId, name: answer.name, scope: answer.scope, replaces: answer.replaces })
    yield* Console.log(`joined ${content.url} as ${answer.name} (${answer.workerId}); scope: ${answer.scope.length === 0 ? "every job" : answer.scope.join(", ")}`)
    if (answer.replaces !== null) yield* Console.log(`this replaces the earlier identity ${answer.replaces}: the slots it still holds on the owner are freed when this machine next says hello`)
    yield* Console.log("svc serve on this machine links to it (a running one picks the link up within seconds)")
  })

export const join = Command.make(
  "join",
  { token: Args.text({ name: "TOKEN" }).pipe(Args.withDescription("the join token svc workers invite printed on the owner (svc_jt_...), or - to read it from stdin (a command line is visible to every local user)")), name: Options.text("name").pipe(Options.optional, Options.withDescription("this worker's human name (default: the name it had with that owner when it joins again, else the host name)")), json },
  ({ json, name, token }) =>
    Effect.gen(function* () {
      // `-`: the token from stdin, where other users do not see it (every local user can read a
      // process's command line while it runs). A token pasted with its line end (or spaces) is the same token.
      const given = token === "-" ? yield* Effect.promise(() => readStdin()) : token
      if (token === "-" && given.trim() === "") return yield* usage("- reads the join token from stdin, and stdin gave none: paste it, then Ctrl-D, or svc workers join - < FILE")
      const bearer = given.trim()
      const content = parseJoinToken(bearer)
      // What is wrong with it, then what to do: it is one line, printed once by the owner's invite.
      if (typeof content === "string") {
        return yield* refused(`${content}: give the whole line svc workers invite printed on the owner (one word, svc_jt_...), or ask the owner's operator for a new one`)
      }
      // A name that cannot be one, said before anything is sent (the owner would refuse it).
      const badName = Option.isSome(name) ? workerNameShapeProblem(name.value) : undefined
      if (badName !== undefined) return yield* usage(`--name: ${badName}; nothing was sent, so this try did not spend the token`)
      const home = (yield* SvcHome).path
      // The link (its credential) is kept here: not in a home another user may write to or owns.
      const unsafe = yield* Effect.promise(() => fs.stat(home).then((st) => unsafeHomeProblem(home, st, currentUid()), () => undefined))
      if (unsafe !== undefined) return yield* refused(`${unsafe}; nothing was sent to the owner, so this try did not spend the token`)
      // This home's own owner: a machine does its owner's work itself, and linked to itself as a
      // worker it would be offered its own work twice, its slots counted twice. Refused before the
      // token is spent.
      if (yield* Effect.promise(() => ownFingerprints(home).then((own) => own.includes(content.fingerprint)))) {
        return yield* refused(
          `this token is from the owner of this very $SVC_HOME (${home}; its certificate sha256 ${content.fingerprint}): an owner runs its own work, it does not join itself; redeem it on another machine, or with another SVC_HOME (nothing was sent, so this try did not spend the token)`
        )
      }
      // A loopback address in the token reaches only the owner's own machine: say so, it is the likely cause.
      const loopback = onlyThisMachine(content.url)
        ? `; the token names ${content.url}, a loopback address: on the owner's own machine, is its svc serve running? From another machine it cannot be reached: the owner's operator should run svc serve with --listen and --public-url (docs/operations.md) and invite again`
        : ""
      const certificate = yield* Effect.tryPromise({
        try: () => fetchPinnedCertificate(content.url, content.fingerprint),
        // The loopback hint only where nothing answered: a certificate that is not the pinned one came from a server that did.
        catch: (e) => {
          const message = e instanceof Error ? e.message : String(e)
          // A server answered, with another certificate (or none): nothing was written to it.
          return typeof (e as { code?: unknown }).code === "string"
            ? unreachable(`cannot reach the owner: ${message}${loopback}`)
            : unreachable(`${message}; nothing was sent to it, so this try did not spend the token`)
        }
      })
      // Redeeming spends the token: first make sure the link it brings can be kept here, by keeping
      // this join's key there until its answer is (run again after an answer that never came,
      // the join is answered again: an earlier try's key is found and sent again).
      const pending = yield* Effect.tryPromise({
        try: () => pendingJoin(home, content.url, content.inviteId),
        catch: (e) =>
          e instanceof JoinBusy
            ? refused(`${e.message}; nothing was sent`)
            : setupProblem(`cannot keep a link in ${linksDir(home)}: ${e instanceof Error ? e.message : String(e)}; nothing was sent to the owner, so this try did not spend the token`)
      })
      return yield* redeem({ bearer, certificate, content, home, json, loopback, name, pending }).pipe(Effect.ensuring(Effect.promise(() => pending.release())), Effect.scoped)
    })
).pipe(Command.withDescription("Redeem a join token: link this machine to the owner as a worker"))
