/** `svc workers invite|join|rotate|revoke|status` (worker-protocol spec, "Command-line operations"), `release` and `leave`. */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { durationSeconds } from "../../domain/manifest/Formats.js"
import type { PendingInvite, WorkerStatus } from "../../app/workers/Owner.js"
import { JOB_ADDRESS } from "../../domain/manifest/JobAddress.js"
import { workerNameFromHost } from "../../domain/workers/Decide.js"
import { parseJoinToken, secretKindOf } from "../../domain/workers/Secrets.js"
import { SvcHome } from "../../infra/SvcHome.js"
import { linkKey, linksDir, checkLinksWritable, readLinks, removeLink, writeLink, type StoredLink } from "../../infra/workers/LinkStore.js"
import { callOwner, fetchPinnedCertificate, makeAgent } from "../../infra/workers/OwnerClient.js"
import { ownFingerprint } from "../../infra/tls/OwnerCertificate.js"
import { currentUid } from "../../infra/PrivateFiles.js"
import { unsafeHomeProblem } from "../../infra/runtime/HomeStart.js"
import type { Leave, WorkerResponse } from "../../app/workers/Protocol.js"
import { admin } from "../admin.js"
import { adminCall } from "../../infra/http/AdminApi.js"
import { exitQuietly, refused, setupProblem, unreachable, usage } from "../CliFailure.js"
import { printJson, printLines, table } from "../output.js"

const json = Options.boolean("json").pipe(Options.withDescription("print one JSON document on stdout"))

/** Whether `url` names this machine's loopback interface: no other machine reaches it. */
export const onlyThisMachine = (url: string): boolean => {
  const host = new URL(url).hostname
  return host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host)
}

const invite = Command.make(
  "invite",
  {
    scope: Options.text("scope").pipe(Options.repeated, Options.withDescription("BAG:JOB@VERSION the worker may claim (repeat for several); none: every job")),
    expires: Options.text("expires").pipe(Options.optional, Options.withDescription("expire the unused invite after DURATION (30m, 12h, 7d; a bare number is seconds), 365d at most; scoped invites expire after 24h at most")),
    name: Options.text("name").pipe(Options.optional, Options.withDescription("the worker's human name"))
  },
  ({ expires, name, scope }) =>
    Effect.gen(function* () {
      const bad = scope.filter((s) => !JOB_ADDRESS.test(s))
      if (bad.length > 0) return yield* usage(`--scope names versioned jobs as BAG:JOB@VERSION (such as hasher:checksum@1.0.0); ${bad.map((b) => JSON.stringify(b)).join(", ")} ${bad.length === 1 ? "is" : "are"} not`)
      const seconds = Option.isSome(expires) ? durationSeconds(expires.value) : null
      const expiresInMs = seconds === undefined ? undefined : seconds === null ? null : seconds * 1000
      if (expiresInMs === undefined) return yield* usage(`--expires takes a duration such as 30m, 12h or 7d (or seconds: 90), not ${JSON.stringify(Option.getOrElse(expires, () => ""))}`)
      const answer = yield* admin("POST", "/invite", { scope, expiresInMs, name: Option.getOrNull(name) })
      // The token alone on stdout, once: TOKEN=$(svc workers invite) works.
      yield* Console.log(String(answer["token"]))
      const until = answer["expiresAt"] === null ? "never expires" : `expires ${new Date(Number(answer["expiresAt"])).toISOString()} if unused`
      yield* Console.error(`invite ${String(answer["inviteId"])}: ${scope.length === 0 ? "every job" : scope.join(", ")}; ${until}. Redeem it on the worker with: svc workers join TOKEN`)
      // An owner from before notes does not send them.
      for (const note of (answer["notes"] as ReadonlyArray<string> | undefined) ?? []) yield* Console.error(`note: ${note}`)
      // The address in the token (never the token itself) is what a worker will call.
      const content = parseJoinToken(String(answer["token"]))
      if (typeof content !== "string" && onlyThisMachine(content.url)) {
        // The port the owner listens on now (--listen), not the default's.
        const port = new URL(content.url).port || "443"
        yield* Console.error(
          `note: the token sends the worker to ${content.url}, which only this machine can reach. For a worker on another machine, restart svc serve with --listen 0.0.0.0:${port} --public-url https://THIS-HOST:${port} (docs/operations.md) and invite again`
        )
      }
    })
).pipe(Command.withDescription("Print a one-time join token for a new worker (stdout, one line)"))

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

const join = Command.make(
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
      const home = (yield* SvcHome).path
      // The link (its credential) is kept here: not in a home another user may write to or owns.
      const unsafe = yield* Effect.promise(() => fs.stat(home).then((st) => unsafeHomeProblem(home, st, currentUid()), () => undefined))
      if (unsafe !== undefined) return yield* refused(`${unsafe}; nothing was redeemed, the token is still good`)
      // This home's own owner: a machine does its owner's work itself, and linked to itself as a
      // worker it would be offered its own work twice, its slots counted twice. Refused before the
      // token is spent.
      if (yield* Effect.promise(() => ownFingerprint(home).then((own) => own === content.fingerprint))) {
        return yield* refused(
          `this token is from the owner of this very $SVC_HOME (${home}; its certificate sha256 ${content.fingerprint}): an owner runs its own work, it does not join itself; redeem it on another machine, or with another SVC_HOME (the token is still good)`
        )
      }
      // A loopback address in the token reaches only the owner's own machine: say so, it is the likely cause.
      const loopback = onlyThisMachine(content.url)
        ? `; the token names ${content.url}, a loopback address: on the owner's own machine, is its svc serve running? From another machine it cannot be reached: the owner's operator should run svc serve with --listen and --public-url (docs/operations.md) and invite again`
        : ""
      const certificate = yield* Effect.tryPromise({
        try: () => fetchPinnedCertificate(content.url, content.fingerprint),
        // The loopback hint only where nothing answered: a certificate that is not the pinned one came from a server that did.
        catch: (e) => unreachable(`cannot reach the owner: ${e instanceof Error ? e.message : String(e)}${typeof (e as { code?: unknown }).code === "string" ? loopback : ""}`)
      })
      // Redeeming spends the token: first make sure the link it brings can be kept here.
      yield* Effect.tryPromise({
        try: () => checkLinksWritable(home),
        catch: (e) => setupProblem(`cannot keep a link in ${linksDir(home)}: ${e instanceof Error ? e.message : String(e)}; nothing was redeemed, the token is still good`)
      })
      const pinned = { url: content.url, fingerprint: content.fingerprint, certificate }
      const agent = makeAgent(pinned)
      // Joining the same owner again: the earlier identity's credential proves this is the same
      // installation, so the owner can release the slots that identity still holds (docs/runs.md).
      const earlier = (yield* Effect.promise(() => readLinks(home))).find((l) => l.key === linkKey(content.url, content.fingerprint))
      const request = {
        kind: "join" as const,
        // Joining again keeps the name it had there (the operator's commands and scripts use it), unless --name says otherwise.
        name: Option.getOrElse(name, () => earlier?.link.name ?? workerNameFromHost(os.hostname())),
        ...(earlier === undefined ? {} : { previousCredential: earlier.link.credential })
      }
      const answer = yield* callOwner(pinned, agent, bearer, request).pipe(
        Effect.mapError((e) => (e._tag === "Unreachable" ? unreachable(`cannot reach the owner: ${e.message}${loopback}`) : refused(`the owner refused: ${e.message}`))),
        Effect.ensuring(Effect.sync(() => agent.destroy()))
      )
      if (answer.kind !== "joined") return yield* refused(`the owner answered ${answer.kind} to join`)
      yield* Effect.tryPromise({
        try: () =>
          writeLink(home, { url: content.url, fingerprint: content.fingerprint, certificate, workerId: answer.workerId, name: answer.name, credential: answer.credential, joinedAt: new Date().toISOString() }),
        catch: (e) =>
          refused(
            `joined ${content.url} as ${answer.name} (${answer.workerId}), but its link could not be written to ${linksDir(home)} (${e instanceof Error ? e.message : String(e)}), and its credential with it: ask the owner's operator to revoke ${answer.workerId} and invite this machine again`
          )
      })
      // The invite's name wins over --name (the operator chose it): say so rather than drop it silently.
      const nameUnused = Option.isSome(name) && name.value !== answer.name ? `the invite names this worker ${answer.name}; --name ${name.value} was not used` : undefined
      if (nameUnused !== undefined) yield* Console.error(`note: ${nameUnused}`)
      if (json) return yield* printJson({ owner: content.url, workerId: answer.workerId, name: answer.name, scope: answer.scope, replaces: answer.replaces })
      yield* Console.log(`joined ${content.url} as ${answer.name} (${answer.workerId}); scope: ${answer.scope.length === 0 ? "every job" : answer.scope.join(", ")}`)
      if (answer.replaces !== null) yield* Console.log(`this replaces the earlier identity ${answer.replaces}: the slots it still holds on the owner are freed when this machine next says hello`)
      yield* Console.log("svc serve on this machine links to it (a running one picks the link up within seconds)")
    })
).pipe(Command.withDescription("Redeem a join token: link this machine to the owner as a worker"))

const workerArg = Args.text({ name: "WORKER" }).pipe(Args.withDescription("worker id or name"))

const rotate = Command.make("rotate", { worker: workerArg, json }, ({ json, worker }) =>
  Effect.gen(function* () {
    const answer = yield* admin("POST", "/rotate", { worker })
    if (json) return yield* printJson({ ...answer, rotation: "pending" })
    yield* Console.log(`rotation requested for ${String(answer["name"])}: the new credential is handed over in the answer to its next call; the old one then works 5 more minutes`)
  })
).pipe(Command.withDescription("Issue a new credential to a worker (the old one works 5 more minutes)"))

const revoke = Command.make("revoke", { worker: Args.text({ name: "WORKER" }).pipe(Args.withDescription("worker id or name, or the id of an invite not yet redeemed")), json }, ({ json, worker }) =>
  Effect.gen(function* () {
    const answer = yield* admin("POST", "/revoke", { worker })
    if (json) return yield* printJson({ ...answer, revoked: true })
    if (answer["kind"] === "invite") {
      const name = answer["name"] === null ? "" : ` (for ${String(answer["name"])})`
      return yield* Console.log(`revoked invite ${String(answer["id"])}${name}: its token can no longer be redeemed`)
    }
    yield* Console.log(`revoked ${String(answer["name"])}: its next call is refused and it is told to stop its work`)
  })
).pipe(Command.withDescription("Revoke a worker (its next call is refused and its running work stopped), or an invite not yet redeemed"))

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

/**
 * USED/CAP; a revoked or Offline worker offers nothing (capacity 0), but may still hold slots
 * until they are released: `1 held`. This owner's attempts waiting there for a slot other work
 * holds: `2/2 +1 waiting`.
 */
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

export const usedOfCapacity = (w: Pick<WorkerStatus, "used" | "capacity" | "revoked"> & { readonly waiting?: number }): string =>
  w.revoked || w.capacity === 0 ? (w.used === 0 ? "-" : `${w.used} held`) : `${w.used}/${w.capacity}${(w.waiting ?? 0) > 0 ? ` +${w.waiting} waiting` : ""}`

const status = Command.make("status", { json }, ({ json }) =>
  Effect.gen(function* () {
    const home = (yield* SvcHome).path
    const running = yield* Effect.either(admin("GET", "/workers"))
    if (running._tag === "Left" && running.left.exitCode === 1) return yield* running.left
    const workers = running._tag === "Right" ? (running.right["workers"] as ReadonlyArray<WorkerStatus>) : []
    const invites = running._tag === "Right" ? ((running.right["invites"] as ReadonlyArray<PendingInvite> | undefined) ?? []) : []
    const linksAnswer = running._tag === "Right" ? yield* admin("GET", "/links") : undefined
    const links = linksAnswer !== undefined
      ? (linksAnswer["links"] as ReadonlyArray<Record<string, unknown>>)
      : (yield* Effect.promise(() => readLinks(home))).map(({ key, link }) => ({ key, url: link.url, workerId: link.workerId, name: link.name, status: null }))
    // Asking the live runtime is the point: when it is not running, show what the files say, then exit 2.
    const notRunning = running._tag === "Left" ? exitQuietly(2) : undefined
    if (json) {
      yield* printJson({ runtime: running._tag === "Right" ? "running" : "not running", workers, invites, owners: links })
      if (notRunning !== undefined) return yield* notRunning
      return
    }
    if (running._tag === "Left") {
      yield* Console.error(
        `svc: ${running.left.message}; ${links.length > 0 ? "the links below are read from $SVC_HOME" : "and this machine works for no owner (svc workers join TOKEN links it to one)"}`
      )
    }
    // A machine that only works for others has no workers of its own: say nothing about them.
    if (workers.length > 0 || (running._tag === "Right" && links.length === 0)) {
      // Every installation is an owner, and may work for others: with neither, both ways out.
      yield* Console.log(
        workers.length === 0
          ? "workers: none linked, and this machine works for no owner; invite a worker with: svc workers invite (or link this machine to an owner: svc workers join TOKEN)"
          : "workers linked to this owner:"
      )
      if (workers.length > 0) {
        yield* printLines(
          table(
            ["NAME", "ID", "STATE", "USED/CAP", "LABELS", "CAPABILITIES", "SCOPE", "LAST SEEN", "WHY"],
            workers.map((w) => [w.name, w.id, w.state, usedOfCapacity(w), w.labels.join(",") || "-", w.capabilities.join(",") || "-", w.scope.join(",") || "all", lastSeenOf(w), w.reason])
          )
        )
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
    if (notRunning !== undefined) return yield* notRunning
  })
).pipe(Command.withDescription("List workers (on an owner) and owners served (on a worker), with states and reasons"))

const force = Options.boolean("force").pipe(Options.withDescription("release a worker that is still advertising (you know it runs nothing)"))

/**
 * What `svc workers release` did: the slots freed; a run placed elsewhere already is not placed
 * again. The worker by name and id: the identities of a machine that joined again share its name.
 */
export const releasedLine = (freed: number, name: string, id: string): string =>
  freed === 0
    ? `nothing to release: no attempt holds a slot of ${name} (${id})`
    : `released ${freed} slot${freed === 1 ? "" : "s"} of ${name} (${id}): its attempts there are recorded as stopped; a run of theirs still unfinished, and not placed elsewhere already, is placed again`

const release = Command.make("release", { worker: workerArg, force, json }, ({ force, json, worker }) =>
  Effect.gen(function* () {
    const answer = yield* admin("POST", "/release", { worker, force })
    if (json) return yield* printJson(answer)
    yield* Console.log(releasedLine(Number(answer["freed"]), String(answer["name"]), String(answer["id"])))
  })
).pipe(Command.withDescription("Confirm a worker (say, a revoked one) no longer runs anything: free the slots its attempts hold"))

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

const leave = Command.make(
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
          links.length === 0 ? `this machine works for no owner: there is no link to leave` : `no link here is to ${owner}; this machine works for: ${links.map((l) => linkLine(l.link)).join("; ")}`
        )
      if (matching.length > 1) return yield* refused(`${owner} names ${matching.length} links: ${matching.map((l) => linkLine(l.link)).join("; ")}; name the one to leave by its owner's URL`)
      const { key, link } = matching[0]!
      // The link goes first (its credential is kept in memory for the call): a running svc serve
      // that hears of the revocation before it notices the link gone then knows this machine left.
      yield* Effect.tryPromise({ try: () => removeLink(home, key), catch: (e) => refused(`cannot remove the link to ${link.url}: ${e instanceof Error ? e.message : String(e)}`) })
      // A running svc serve ends the link within 2 s of its removal, stopping what it ran for that
      // owner: once it has, this machine can say it runs nothing there, and the owner frees the
      // slots those attempts held (it held them until its operator released them).
      const stopped = yield* linkStopped(home, key)
      // Then the owner is told: it revokes the worker, saying it left.
      const agent = makeAgent({ url: link.url, fingerprint: link.fingerprint, certificate: link.certificate })
      const pinned = { url: link.url, fingerprint: link.fingerprint, certificate: link.certificate }
      const told = yield* Effect.either(tellLeaving((request) => callOwner(pinned, agent, link.credential, request), stopped)).pipe(
        Effect.ensuring(Effect.sync(() => agent.destroy()))
      )
      const released = told._tag === "Right" && told.right.kind === "left" ? told.right.released : undefined
      const outcome: { readonly kind: "told" } | { readonly kind: "revoked already" } | { readonly kind: "not told"; readonly why: string } =
        told._tag === "Right"
          ? { kind: "told" as const }
          : told.left._tag === "Refusal" && told.left.code === "revoked"
            ? { kind: "revoked already" as const }
            : { kind: "not told" as const, why: told.left.message }
      if (json) yield* printJson({ owner: link.url, workerId: link.workerId, name: link.name, ownerTold: outcome.kind !== "not told", ...(released === undefined ? {} : { released }) })
      else yield* Console.log(`left ${linkLine(link)}: its credential is deleted here, and a running svc serve stops what it runs for that owner within 2 s`)
      const again = "To work for it again, join with a new token."
      yield* Console.error(
        outcome.kind === "told" && released !== undefined
          ? `the owner was told: it lists ${link.name} as revoked (it left), and places again whatever ran here for it, stopped here first${released === 0 ? "" : `; the ${released === 1 ? "slot" : `${released} slots`} it held there ${released === 1 ? "is" : "are"} freed`}. ${again}`
          : outcome.kind === "told"
          ? `the owner was told: it lists ${link.name} as revoked (it left), and places again whatever ran here for it; slots such attempts held stay reserved there until its operator releases them (svc workers release ${link.workerId}), since no svc serve running here said it had stopped them. ${again}`
          : outcome.kind === "revoked already"
            ? `the owner had revoked ${link.name} already. ${again}`
            : `the owner could not be told (${outcome.why}): it still lists ${link.name}, Offline once its advertisement lapses; attempts it had here are placed again. Its operator can revoke it: svc workers revoke ${link.workerId}. ${again}`
      )
    })
).pipe(Command.withDescription("Stop working for an owner: tell it (it revokes this worker) and remove this machine's link to it, its credential with it"))

export const workersCommand = Command.make("workers").pipe(
  Command.withDescription("Workers: invite, join, rotate, revoke, release, status, leave"),
  Command.withSubcommands([invite, join, rotate, revoke, release, status, leave])
)
