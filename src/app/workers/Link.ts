/**
 * A worker's link to one owner, run inside `svc serve`: hello, then advertise at least every
 * 5 seconds (every 4, so a late timer still refreshes in time), saving any credential the owner
 * hands over. With a work side, it also claims work while this machine has a free slot, runs
 * it (see Work.ts), heartbeats and reports. A network failure backs off with jitter and says
 * hello again, listing what it still runs; a fenced, revoked or unknown credential ends the
 * link and stops its work (docs/protocol.md).
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Random from "effect/Random"
import * as Ref from "effect/Ref"
import { revisionOf, type Refusal, type WorkerRequest, type WorkerResponse } from "./Protocol.js"
import type { Offer } from "./Offer.js"
import { makeWork, type WorkCounts, type WorkSide } from "./Work.js"

/**
 * Between one advertisement's answer and the next advertisement: inside the 5 s the owner's
 * welcome gives as the most (`advertiseEverySeconds`, the spec's refresh), with room for the call.
 */
export const ADVERTISE_EVERY = Duration.seconds(4)
export const BACKOFF_FIRST = Duration.seconds(1)
/** A gap between this process's beats (every second) longer than this is a pause of its own. */
export const OWN_PAUSE_MS = 5_000
/** A call failing this long after such a pause ended is taken to have failed for it (a call's own limit: 15 s). */
const OWN_PAUSE_BLAME_MS = 15_000
/** How long a link that ends waits for the owner to hear its bye. */
export const BYE_WITHIN = Duration.seconds(2)
/**
 * The longest wait between hellos, jitter included: shorter than the grace an owner gives its
 * workers after it starts (15 s, docs/runs.md) before it places their attempts again, so a
 * worker that backed off through an owner's outage says hello, with what it runs, in time.
 */
export const BACKOFF_MAX = Duration.seconds(10)

/** The owner could not be reached (connection refused, TLS pin mismatch, timeout...). */
export class Unreachable extends Data.TaggedError("Unreachable")<{
  readonly message: string
  /** The owner's address presented another certificate than the pinned one (it may have signed the change). */
  readonly certificateChanged?: boolean
  /** The owner answered that it is starting (503 `starting`: it reads its journal): it answers in a moment. */
  readonly starting?: boolean
}> {}

export interface LinkRecord {
  readonly key: string
  readonly url: string
  readonly workerId: string
  readonly name: string
}

/** Port: calls the owner's route with the link's current credential. */
export interface OwnerTransport {
  readonly call: (request: WorkerRequest) => Effect.Effect<WorkerResponse, Refusal | Unreachable>
  /**
   * Persists a handed-over credential before it is used (so a crash cannot lose it). One that
   * cannot be saved (a read-only or full disk) is used all the same, by this process only: its
   * link still holds the old one, which stops working when its grace ends.
   */
  readonly saveCredential: (credential: string) => Effect.Effect<void, CredentialNotSaved>
}

/** A handed-over credential that could not be written to the link: why (never the credential). */
export class CredentialNotSaved extends Data.TaggedError("CredentialNotSaved")<{ readonly message: string }> {}

/**
 * The transport over one link's credential, kept here: `send` calls the route with the
 * credential given; `persist` writes a handed-over one before it is used. A call refused as
 * unauthenticated after its credential was replaced meanwhile is sent again with the new one:
 * calls overlap (a claim waits at the owner while heartbeats go on), and an answer to a call
 * made with the old credential may hand over yet another one, replacing the credential a call
 * in flight carries (docs/protocol.md, "Rotation"). A refusal says nothing happened on the
 * owner, so sending again is safe.
 */
export const credentialTransport = (
  send: (credential: string, request: WorkerRequest) => Effect.Effect<WorkerResponse, Refusal | Unreachable>,
  initial: string,
  persist: (credential: string) => Effect.Effect<void, CredentialNotSaved>
): OwnerTransport => {
  let credential = initial
  return {
    call: (request) => {
      const used = credential
      return send(used, request).pipe(
        Effect.catchIf(
          (e) => e._tag === "Refusal" && e.code === "unauthenticated" && credential !== used,
          () => Effect.suspend(() => send(credential, request))
        )
      )
    },
    // Used once saved; not saved (a read-only or full disk), used all the same by this process: the
    // old one works only until its grace ends. A defect of the saving leaves it unused.
    saveCredential: (next) => {
      const use = Effect.sync(() => void (credential = next))
      return persist(next).pipe(Effect.tap(() => use), Effect.tapError(() => use))
    }
  }
}

export type LinkPhase = "connecting" | "linked" | "backing-off" | "fenced" | "revoked" | "refused"

export interface LinkStatus {
  readonly phase: LinkPhase
  readonly detail: string
  readonly fence: number | null
  readonly lastAdvertisedAt: number | null
  readonly offer: Offer | null
  /** As of the last advertisement: the attempts this machine runs for this owner (one may wait for a slot). */
  readonly running: number
  /** As of the last advertisement: the machine's slots other work held (other owners, its own runs). */
  readonly busy: number
  /** The jobs this owner lets this worker run (its welcome says so); empty: every job; null: not linked yet. */
  readonly scope: ReadonlyArray<string> | null
  /** What it does for the owner now, read when asked (running, waiting, reporting, busy), over the advertisement's. */
  readonly live?: () => WorkCounts
  /** A credential handed over that could not be saved in the link file: what a restart after its grace meets. */
  readonly credentialNotSaved?: string
}

export class LinkEnded extends Data.TaggedError("LinkEnded")<{ readonly phase: LinkPhase; readonly message: string }> {}

const afterRefusal = (r: Refusal): LinkEnded | null => {
  switch (r.code) {
    case "fenced":
      // The refusal says it already: another process took the session over (fence N).
      return new LinkEnded({ phase: "fenced", message: r.message })
    case "revoked":
      return new LinkEnded({ phase: "revoked", message: r.message })
    case "unauthenticated":
    case "join-refused":
      return new LinkEnded({ phase: "refused", message: r.message })
    default:
      return null
  }
}

/** How often a handed-over credential that could not be saved is tried again (with the link's calls). */
export const SAVE_AGAIN_EVERY = Duration.seconds(5)

/** A wait as people read it: "10.8 s". */
const secondsOf = (d: Duration.Duration): string => `${(Duration.toMillis(d) / 1000).toFixed(1)} s`

export class LinkStatusRef extends Context.Tag("svc/LinkStatusRef")<LinkStatusRef, Ref.Ref<ReadonlyMap<string, LinkStatus>>>() {}

/** The session a link holds: the fence and key its welcome handed over. */
export interface HeldSession {
  readonly fence: number
  readonly key: string
}

/** Where a link keeps the session it holds, so that its process's own restart resumes it. */
export interface SessionMemory {
  /** The session this home held on this boot, if any. */
  readonly load: Effect.Effect<HeldSession | undefined>
  /** Keeps the session a welcome handed over (best effort: a note that cannot be written is skipped). */
  readonly save: (session: HeldSession) => Effect.Effect<void>
}

/**
 * Runs one link until it ends (fenced, revoked, refused); network trouble never ends it.
 * `offer` is read before each advertisement, so bags installed meanwhile are advertised.
 */
/**
 * A bell for changes of this machine's offer: `changes` takes a wait for the next ring from now on
 * (what `runLink` takes as `offerChanges`), `ring` ends every wait taken so far.
 */
export const offerChangeBell = () => {
  let next = Deferred.unsafeMake<void>(FiberId.none)
  return {
    changes: Effect.sync(() => Deferred.await(next)),
    ring: () => {
      const rung = next
      next = Deferred.unsafeMake<void>(FiberId.none)
      Deferred.unsafeDone(rung, Exit.void)
    }
  }
}

export const runLink = (
  link: LinkRecord,
  transport: OwnerTransport,
  offer: Effect.Effect<Offer>,
  status: Ref.Ref<ReadonlyMap<string, LinkStatus>>,
  side?: WorkSide,
  /** Whether this machine has left the owner (`svc workers leave` removed the link): its revocation is then no surprise. */
  left: Effect.Effect<boolean> = Effect.succeed(false),
  /** Where the session it holds is kept across a crash of this process (infra/workers/SessionMemory.ts); none: in memory only. */
  sessions?: SessionMemory,
  /**
   * A wait for the next change of this machine's offer from now on (`svc bag install|remove`),
   * taken before each advertisement is made: a change while it is on its way is not missed (it
   * was, and waited the whole 4 s: attack), and the next advertisement goes at once.
   */
  offerChanges: Effect.Effect<Effect.Effect<void>> = Effect.succeed(Effect.never)
) =>
  Effect.scoped(Effect.gen(function* () {
    const set = (s: Partial<LinkStatus>) =>
      Ref.update(status, (m) => {
        const next = new Map(m)
        const current = m.get(link.key) ?? { phase: "connecting" as const, detail: "", fence: null, lastAdvertisedAt: null, offer: null, running: 0, busy: 0, scope: null }
        next.set(link.key, { ...current, ...s })
        return next
      })
    // Saved: what an earlier one that could not be saved left in the status is over.
    const saved = Ref.update(status, (m) => {
      const current = m.get(link.key)
      if (current?.credentialNotSaved === undefined) return m
      const { credentialNotSaved: _over, ...rest } = current
      return new Map(m).set(link.key, rest)
    })
    // The latest credential handed over that could not be saved, and when saving it was last tried:
    // tried again with the calls after it, at most every SAVE_AGAIN_EVERY, until it is saved (the
    // link made writable, as the error says to, within the old one's grace).
    let unsaved: string | undefined
    let triedAt = 0
    const saveAgain = Effect.suspend(() => {
      const credential = unsaved
      if (credential === undefined) return Effect.void
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        if (now - triedAt < Duration.toMillis(SAVE_AGAIN_EVERY)) return Effect.void
        triedAt = now
        return transport.saveCredential(credential).pipe(
          Effect.zipRight(
            Effect.suspend(() => {
              if (unsaved === credential) unsaved = undefined
              return Effect.zipRight(saved, Effect.logInfo(`the credential the owner at ${link.url} handed over to ${link.name} is saved in its link now`))
            })
          ),
          // Still not: said once already, and shown in the status.
          Effect.catchAll(() => Effect.void)
        )
      })
    })
    // A rotation is said once, when the new credential is saved (never the credential itself).
    const takeCredential = (answer: WorkerResponse) => {
      if (answer.kind === "joined" || answer.kind === "left" || answer.newCredential === null) return saveAgain
      const until = answer.newCredential.previousValidUntil
      const credential = answer.newCredential.credential
      return transport.saveCredential(credential).pipe(
        Effect.zipRight(Effect.sync(() => void (unsaved = undefined))),
        Effect.zipRight(saved),
        Effect.zipRight(Effect.logInfo(`the owner at ${link.url} rotated ${link.name}'s credential: the new one is saved in its link (the old one works until ${until})`)),
        // Said, not ended on: the link goes on with the new credential in memory. The old one in
        // the link file is refused after its grace: a restart after that must join again.
        Effect.catchAll((e) =>
          Effect.suspend(() => {
            // One not saved already: the link holds a credential from before the one just replaced,
            // which the owner no longer takes (it keeps the current one and the one it replaced).
            const stale = unsaved !== undefined
            return Effect.zipRight(
              Effect.zipRight(
                Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => void ((unsaved = credential), (triedAt = now)))),
                set({
                  credentialNotSaved: stale
                    ? `the credentials the owner handed over could not be saved (${e.message}): the link's own is from before the last two rotations, and a restart now will be refused`
                    : `the credential the owner handed over could not be saved (${e.message}): a restart after ${until} will be refused`
                })
              ),
              Effect.logError(
                stale
                  ? `the owner at ${link.url} rotated ${link.name}'s credential again, and the new one could not be saved in its link either: ${e.message}; this process uses it, and the credential the link holds no longer works: make the link writable (the new one is saved as soon as it can be; a restart before that is refused, and the machine must join again)`
                  : `the owner at ${link.url} rotated ${link.name}'s credential, but the new one could not be saved in its link: ${e.message}; this process uses it, and the link's old one works until ${until}: make the link writable before then (a restart after it is refused, and the machine must join again)`
              )
            )
          })
        )
      )
    }

    // An owner that could not record a call for want of its store (a full disk) changed nothing:
    // the call is made again as to an owner not reachable, a report kept until it is taken.
    const call = (request: WorkerRequest) =>
      transport.call(request).pipe(
        Effect.mapError((e) => (e._tag === "Refusal" && e.code === "unavailable" ? new Unreachable({ message: `${link.url}: answered 503: ${e.message}` }) : e)),
        Effect.tap(takeCredential)
      )
    // Attempts outlive sessions: a reconnect says hello listing them, and they carry on.
    const work = side === undefined ? undefined : yield* makeWork(side, call, `the owner at ${link.url}`, () => revision)
    if (work !== undefined) yield* set({ live: work.counts })
    /**
     * The session this process holds, to resume when it says hello again; and, kept by `sessions`,
     * the one the process before it held on this home and boot (it crashed), so its own restart
     * is no takeover.
     */
    let held: HeldSession | undefined = sessions === undefined ? undefined : yield* sessions.load
    /** What of the protocol the owner takes, as its last welcome said (Protocol.ts, `PROTOCOL_REVISION`). */
    let revision = 1
    // Whatever ends the link stops the work it holds (revoked: the owner says so; fenced: another
    // process has the session). Then, best effort, the session is said to be over (a clean stop:
    // the owner places that work again now, and the next process is no takeover); refused when
    // the link ended for a refusal, which is the end anyway. A finalizer runs uninterruptibly: the
    // bye is made interruptible so that its 2 s limit holds (an owner stopped with SIGSTOP held
    // the stop for the call's own 45 s).
    yield* Effect.addFinalizer(() =>
      Effect.zipRight(
        work === undefined ? Effect.void : work.stopAll,
        Effect.suspend(() =>
          // An owner from before revision 2 has no bye (it would refuse it): its session lapses in 15 s.
          held === undefined || revision < 2
            ? Effect.void
            : Effect.flatMap(left, (leaving) => {
                // Revision 3: it says when the link ends because this machine leaves the owner.
                const bye = { kind: "bye" as const, fence: held!.fence, ...(leaving && revision >= 3 ? { leaving: true as const } : {}) }
                return Effect.ignore(Effect.timeout(Effect.interruptible(transport.call(bye)), BYE_WITHIN))
              })
        )
      )
    )
    let backoff = BACKOFF_FIRST
    // The failure last logged: a run of failed retries is logged once (and again if its reason changes).
    let trouble: string | null = null
    /**
     * This machine's own pauses (its svc serve stopped with SIGSTOP, the machine suspended, an
     * event loop held): a beat every second, and a gap of more than OWN_PAUSE_MS between two is
     * one. Calls in flight then went unanswered for want of this process, not of the owner: the
     * log says so instead of blaming every owner at once.
     */
    let lastBeat = yield* Clock.currentTimeMillis
    let pause: { readonly ms: number; readonly endedAt: number } | undefined
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.zipRight(
          Effect.sleep("1 second"),
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.sync(() => {
              if (now - lastBeat > OWN_PAUSE_MS) pause = { ms: now - lastBeat, endedAt: now }
              lastBeat = now
            })
          )
        )
      )
    )
    /** A pause of this machine that a call failing now may owe its failure to (taken once), in ms. */
    const ownPause = Effect.map(Clock.currentTimeMillis, (now) => {
      const ongoing = now - lastBeat > OWN_PAUSE_MS ? now - lastBeat : undefined
      const recent = pause !== undefined && now - pause.endedAt <= OWN_PAUSE_BLAME_MS ? pause.ms : undefined
      pause = undefined
      return ongoing ?? recent
    })
    for (;;) {
      yield* set({ phase: "connecting", detail: `calling ${link.url}` })
      const session = yield* Effect.either(
        Effect.scoped(
          Effect.gen(function* () {
            const welcome = yield* call({ kind: "hello", protocol: 1, running: work === undefined ? [] : work.running(), ...(held === undefined ? {} : { resumes: held }) })
            if (welcome.kind !== "welcome") return yield* new Unreachable({ message: `unexpected answer ${welcome.kind} to hello` })
            held = welcome.sessionKey === undefined ? undefined : { fence: welcome.fence, key: welcome.sessionKey }
            revision = revisionOf(welcome)
            if (held !== undefined && sessions !== undefined) yield* sessions.save(held)
            backoff = BACKOFF_FIRST
            yield* set({ phase: "linked", detail: `session fence ${welcome.fence}`, fence: welcome.fence, scope: welcome.scope })
            yield* Effect.logInfo(`linked to the owner at ${link.url} as ${link.name}${trouble === null ? "" : " again"} (session fence ${welcome.fence})`)
            trouble = null
            const advertising = Effect.gen(function* () {
              for (;;) {
                const changed = yield* offerChanges
                const o = yield* offer
                // The slots other work holds: the owner counts them as used when it places.
                const busy = work === undefined ? 0 : work.busyElsewhere()
                const answer = yield* call({
                  kind: "advertise",
                  fence: welcome.fence,
                  capacity: o.capacity,
                  labels: o.labels,
                  capabilities: o.capabilities,
                  artifacts: o.artifacts,
                  ...(busy > 0 ? { busy } : {})
                })
                if (work !== undefined && answer.kind === "ack") yield* work.stop(answer.stop)
                yield* set({ lastAdvertisedAt: yield* Clock.currentTimeMillis, offer: o, running: work === undefined ? 0 : work.running().length, busy })
                yield* Effect.raceFirst(Effect.sleep(ADVERTISE_EVERY), changed)
              }
            })
            if (work === undefined) return yield* advertising
            yield* work.stop(welcome.stop)
            // Claims and heartbeats belong to this session: whichever fails first ends it (and a new hello follows).
            return yield* Effect.raceFirst(advertising, work.session(welcome.fence))
          })
        )
      )
      if (session._tag === "Right") continue
      const error = session.left
      if (error._tag === "Refusal") {
        const ended = afterRefusal(error)
        if (ended !== null) {
          yield* set({ phase: ended.phase, detail: ended.message })
          // Revoked because this machine left it (the owner was told before the runtime noticed the link gone): not an alarm.
          if (ended.phase === "revoked" && (yield* left)) {
            yield* Effect.logInfo(`the link to the owner at ${link.url} as ${link.name} has ended: this machine left it (svc workers leave); its work is stopped`)
          } else {
            yield* Effect.logError(`the link to the owner at ${link.url} as ${link.name} has ended (${ended.phase}): ${ended.message}; its work is stopped`)
          }
          return yield* ended
        }
      }
      // Unreachable, or a refusal a new session may cure: back off with jitter, say hello again. An
      // owner that answered it is starting answers in a moment: called again after the first wait,
      // not the longest one a run of failures while it was down had grown to (10 s of slots idle).
      if (error._tag === "Unreachable" && error.starting === true) backoff = BACKOFF_FIRST
      const jitter = yield* Random.nextRange(0.5, 1.5)
      // Capped after the jitter: at most BACKOFF_MAX, whatever the draw (it was up to 1.5 x that).
      const wait = Duration.min(Duration.times(backoff, jitter), BACKOFF_MAX)
      yield* set({ phase: "backing-off", detail: `${error.message}; retrying in ${secondsOf(wait)}` })
      const paused = error._tag === "Unreachable" ? yield* ownPause : undefined
      // A transport's message may start with the owner's address, which the line names already.
      const reason = error.message.startsWith(`${link.url}: `) ? error.message.slice(link.url.length + 2) : error.message
      if (paused !== undefined) {
        yield* Effect.logWarning(
          `this machine did not run for ${Math.round(paused / 1000)} s (its svc serve was stopped, the machine suspended or overloaded, or its clock stepped forward): the owner at ${link.url} went unanswered meanwhile (${reason}); saying hello again in ${secondsOf(wait)}`
        )
        // Not the owner's trouble: the same failure again, with this machine running, is said as its.
        trouble = "this machine did not run"
      } else if (trouble !== error.message) {
        yield* Effect.logWarning(
          `${error._tag === "Unreachable" ? `the owner at ${link.url} cannot be reached` : `the owner at ${link.url} refused a call (${error.code})`}: ${reason}; saying hello again in ${secondsOf(wait)}, then at most every ${secondsOf(BACKOFF_MAX)} until it answers`
        )
        trouble = error.message
      }
      yield* Effect.sleep(wait)
      backoff = Duration.min(Duration.times(backoff, 2), BACKOFF_MAX)
    }
  }))
