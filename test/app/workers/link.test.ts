/**
 * The worker's link with a scripted owner and Effect's TestClock: it advertises within every 5
 * seconds, saves a handed-over credential before its next call, backs off when the owner is
 * away, and ends when fenced or revoked.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/TestClock"
import { BYE_WITHIN, CredentialNotSaved, credentialTransport, offerChangeBell, runLink, Unreachable, type LinkStatus, type OwnerTransport } from "../../../src/app/workers/Link.js"
import type { Offer } from "../../../src/app/workers/Offer.js"
import { PROTOCOL_REVISION, Refusal, type WorkerRequest, type WorkerResponse } from "../../../src/app/workers/Protocol.js"
import { makeSlots } from "../../../src/app/workers/Slots.js"
import { capturingLogs } from "../../support/logs.js"

const offer: Offer = { capacity: 4, labels: ["arch=x64", "os=linux"], capabilities: ["node"], artifacts: [], withheld: [] }
const link = { key: "k", url: "https://owner", workerId: "w1", name: "lab-1" }


/** An owner that answers by a script and records the calls with their time. */
const scripted = (answer: (request: WorkerRequest, n: number) => Effect.Effect<WorkerResponse, Refusal | Unreachable>) =>
  Effect.gen(function* () {
    const calls: Array<{ kind: string; at: number }> = []
    const saved: Array<string> = []
    const transport: OwnerTransport = {
      call: (request) =>
        Effect.flatMap(TestClock.currentTimeMillis, (at) => {
          calls.push({ kind: request.kind, at })
          return answer(request, calls.length)
        }),
      saveCredential: (c) => Effect.sync(() => saved.push(c))
    }
    const status = yield* Ref.make<ReadonlyMap<string, LinkStatus>>(new Map())
    return { calls, saved, transport, status }
  })

const welcome = (fence = 1, newCredential: { credential: string; previousValidUntil: string } | null = null): WorkerResponse => ({
  kind: "welcome",
  workerId: "w1",
  name: "lab-1",
  fence,
  scope: [],
  advertiseEverySeconds: 5,
  stop: [],
  newCredential,
  revision: PROTOCOL_REVISION
})
const ack = (newCredential: { credential: string; previousValidUntil: string } | null = null): WorkerResponse => ({ kind: "ack", stop: [], newCredential })

describe("the worker's link", () => {
  it.effect("says hello, then advertises at least every 5 seconds", () =>
    Effect.gen(function* () {
      const s = yield* scripted((r) => Effect.succeed(r.kind === "hello" ? welcome() : ack()))
      const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status))
      yield* TestClock.adjust("60 seconds")
      expect(s.calls[0]!.kind).toBe("hello")
      const ads = s.calls.filter((c) => c.kind === "advertise").map((c) => c.at)
      expect(ads.length).toBeGreaterThanOrEqual(12)
      for (let i = 1; i < ads.length; i++) expect(ads[i]! - ads[i - 1]!).toBeLessThan(5_000)
      // The scope the owner gave it, from the welcome (empty: every job), for svc workers status on the worker.
      expect((yield* Ref.get(s.status)).get("k")).toMatchObject({ phase: "linked", fence: 1, scope: [] })
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect("advertises at once when this machine's offer may have changed (svc bag install|remove), then every 4 s again", () =>
    Effect.gen(function* () {
      const s = yield* scripted((r) => Effect.succeed(r.kind === "hello" ? welcome() : ack()))
      const bell = offerChangeBell()
      const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status, undefined, undefined, undefined, bell.changes))
      yield* TestClock.adjust("1 second")
      const ads = () => s.calls.filter((c) => c.kind === "advertise").map((c) => c.at)
      expect(ads()).toEqual([0])
      bell.ring()
      yield* TestClock.adjust("1 millis")
      expect(ads()).toEqual([0, 1_000])
      yield* TestClock.adjust("4 seconds")
      expect(ads()).toEqual([0, 1_000, 5_000])
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect("a change of the offer while an advertisement is on its way is not missed: the next one goes as soon as that one is answered", () =>
    Effect.gen(function* () {
      // Each advertisement is answered 500 ms after it is sent.
      const s = yield* scripted((r) => (r.kind === "hello" ? Effect.succeed(welcome()) : Effect.as(Effect.sleep("500 millis"), ack())))
      const bell = offerChangeBell()
      const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status, undefined, undefined, undefined, bell.changes))
      yield* TestClock.adjust("100 millis")
      const ads = () => s.calls.filter((c) => c.kind === "advertise").map((c) => c.at)
      expect(ads()).toEqual([0])
      // Bags installed while it is on its way.
      bell.ring()
      yield* TestClock.adjust("500 millis")
      expect(ads()).toEqual([0, 500])
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect("advertises the slots other work holds on this machine (other owners, its own runs) as busy, and none when there are none", () =>
    Effect.gen(function* () {
      const advertised: Array<number | undefined> = []
      const s = yield* scripted((r) => {
        if (r.kind === "advertise") advertised.push(r.busy)
        // Claims wait (a long poll that this test never lets end).
        return r.kind === "hello" ? Effect.succeed(welcome()) : r.kind === "claim" ? Effect.as(Effect.never, ack()) : Effect.succeed(ack())
      })
      const slots = yield* makeSlots(3)
      const side = {
        slots,
        resolve: () => Effect.dieMessage("no job is run in this test"),
        executor: { run: () => Effect.dieMessage("no job is run in this test") },
        // No job runs here, so no output: a port with no files (real file I/O would not keep to the TestClock).
        files: {
          paths: () => ({ stdout: "", stderr: "" }),
          outputLimit: 16 * 1024 * 1024,
          append: () => Effect.void,
          sizes: () => Effect.succeed({ stdout: 0, stderr: 0 }),
          truncate: () => Effect.void,
          tail: () => Effect.succeed({ text: "", skipped: 0 }),
          readFrom: (_attempt: string, _stream: "stdout" | "stderr", offset: number) => Effect.succeed({ text: "", next: offset }),
          attempts: Effect.succeed([]),
          remove: () => Effect.void,
          noteRemoved: () => Effect.void,
          wasRemoved: () => Effect.succeed(false)
        },
        claimWaitSeconds: 20,
        heartbeatEvery: Duration.seconds(3)
      }
      // Two slots taken by other work before the link starts.
      yield* slots.take
      yield* slots.take
      const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status, side))
      yield* TestClock.adjust("1 second")
      expect(advertised).toEqual([2])
      yield* slots.release
      yield* TestClock.adjust("5 seconds")
      expect(advertised.at(-1)).toBe(1)
      yield* slots.release
      yield* TestClock.adjust("5 seconds")
      // None held elsewhere: the field is left out.
      expect(advertised.at(-1)).toBeUndefined()
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect("saves a handed-over credential, and says once that the owner rotated it (never the credential)", () =>
    Effect.gen(function* () {
      const s = yield* scripted((r, n) => Effect.succeed(r.kind === "hello" ? welcome() : ack(n === 3 ? { credential: "svc_wk_new", previousValidUntil: "2026-01-01T00:05:00Z" } : null)))
      const logs: Array<string> = []
      const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status).pipe(Effect.provide(capturingLogs(logs))))
      yield* TestClock.adjust("10 seconds")
      expect(s.saved).toEqual(["svc_wk_new"])
      expect(logs.filter((l) => l.includes("rotated"))).toEqual([
        "INFO the owner at https://owner rotated lab-1's credential: the new one is saved in its link (the old one works until 2026-01-01T00:05:00Z)"
      ])
      expect(logs.join("\n")).not.toContain("svc_wk_new")
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect("keeps each session a welcome hands over, and says its first hello resuming the one kept (a crash of its own process is no takeover)", () =>
    Effect.gen(function* () {
      const hellos: Array<WorkerRequest> = []
      const kept: Array<{ fence: number; key: string }> = []
      const s = yield* scripted((r) => {
        if (r.kind === "hello") {
          hellos.push(r)
          return Effect.succeed({ ...welcome(5), sessionKey: "key-5" } as WorkerResponse)
        }
        return Effect.succeed(ack())
      })
      const sessions = { load: Effect.succeed({ fence: 4, key: "key-4" }), save: (held: { fence: number; key: string }) => Effect.sync(() => void kept.push(held)) }
      const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status, undefined, Effect.succeed(false), sessions))
      yield* TestClock.adjust("1 second")
      expect(hellos[0]).toMatchObject({ kind: "hello", resumes: { fence: 4, key: "key-4" } })
      expect(kept).toEqual([{ fence: 5, key: "key-5" }])
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect("says hello again with the session it held (fence and key), so that the owner sees it resumes, not a takeover", () =>
    Effect.gen(function* () {
      const hellos: Array<WorkerRequest> = []
      let fence = 0
      let lose = false
      const s = yield* scripted((r) => {
        if (r.kind === "hello") {
          hellos.push(r)
          fence++
          return Effect.succeed({ ...welcome(fence), sessionKey: `key-${fence}` } as WorkerResponse)
        }
        // The owner goes away once (a restart, say), after the first session began.
        if (lose) {
          lose = false
          return Effect.fail(new Unreachable({ message: "connection refused" }))
        }
        return Effect.succeed(ack())
      })
      const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status))
      yield* TestClock.adjust("1 second")
      lose = true
      yield* TestClock.adjust("60 seconds")
      expect(hellos.length).toBeGreaterThanOrEqual(2)
      expect(hellos[0]).not.toHaveProperty("resumes")
      expect(hellos[1]).toMatchObject({ kind: "hello", resumes: { fence: 1, key: "key-1" } })
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect("says bye with its session's fence when it ends (a clean stop)", () =>
    Effect.gen(function* () {
      const byes: Array<WorkerRequest> = []
      const s = yield* scripted((r) => {
        if (r.kind === "bye") byes.push(r)
        return Effect.succeed(r.kind === "hello" ? ({ ...welcome(3), sessionKey: "k" } as WorkerResponse) : ack())
      })
      const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status))
      yield* TestClock.adjust("1 second")
      expect(byes).toEqual([])
      yield* Fiber.interrupt(fiber)
      expect(byes).toEqual([{ kind: "bye", fence: 3 }])
    })
  )

  it.effect("says in its bye that it leaves when its link was removed (svc workers leave), to an owner of revision 3", () =>
    Effect.gen(function* () {
      const byes: Array<WorkerRequest> = []
      const at = (revision: number) =>
        Effect.gen(function* () {
          const s = yield* scripted((r) => {
            if (r.kind === "bye") byes.push(r)
            return Effect.succeed(r.kind === "hello" ? ({ ...welcome(3), sessionKey: "k", revision } as WorkerResponse) : ack())
          })
          const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status, undefined, Effect.succeed(true)))
          yield* TestClock.adjust("1 second")
          yield* Fiber.interrupt(fiber)
        })
      yield* at(3)
      // An owner of revision 2 would refuse the field (and with it the bye).
      yield* at(2)
      expect(byes).toEqual([
        { kind: "bye", fence: 3, leaving: true },
        { kind: "bye", fence: 3 }
      ])
    })
  )

  it.effect("says no bye to an owner from before revision 2, which would refuse it (its session lapses)", () =>
    Effect.gen(function* () {
      const s = yield* scripted((r) => {
        if (r.kind !== "hello") return Effect.succeed(ack())
        const { revision: _, ...before } = { ...welcome(3), sessionKey: "k" } as Extract<WorkerResponse, { kind: "welcome" }>
        return Effect.succeed(before as WorkerResponse)
      })
      const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status))
      yield* TestClock.adjust("1 second")
      yield* Fiber.interrupt(fiber)
      expect(s.calls.map((c) => c.kind)).not.toContain("bye")
    })
  )

  it.effect("gives up its bye after 2 s when the owner does not answer (stopped with SIGSTOP): it held the stop for the call's own 45 s", () =>
    Effect.gen(function* () {
      const s = yield* scripted((r) => (r.kind === "bye" ? Effect.never : Effect.succeed(r.kind === "hello" ? ({ ...welcome(3), sessionKey: "k" } as WorkerResponse) : ack())))
      const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status))
      yield* TestClock.adjust("1 second")
      const ending = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* TestClock.adjust(Duration.subtract(BYE_WITHIN, Duration.millis(1)))
      expect(ending.unsafePoll()).toBeNull()
      yield* TestClock.adjust(Duration.millis(1))
      yield* Fiber.join(ending)
      expect(s.calls.at(-1)?.kind).toBe("bye")
    })
  )

  it.effect("backs off while the owner is away, with growing waits, then links again", () =>
    Effect.gen(function* () {
      let away = true
      const s = yield* scripted((r) => (away ? Effect.fail(new Unreachable({ message: "connection refused" })) : Effect.succeed(r.kind === "hello" ? welcome() : ack())))
      const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status))
      yield* TestClock.adjust("60 seconds")
      const hellos = s.calls.filter((c) => c.kind === "hello").map((c) => c.at)
      expect(hellos.length).toBeGreaterThanOrEqual(7)
      expect(hellos.length).toBeLessThan(20)
      // Never more than 10 s apart, jitter included: within an owner's 15 s grace after its restart.
      for (let i = 1; i < hellos.length; i++) expect(hellos[i]! - hellos[i - 1]!).toBeLessThanOrEqual(10_000 + 0.001)
      expect((yield* Ref.get(s.status)).get("k")?.phase).toBe("backing-off")
      away = false
      yield* TestClock.adjust("60 seconds")
      expect((yield* Ref.get(s.status)).get("k")?.phase).toBe("linked")
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect("an owner that answers it is starting is called again after the first wait, not the longest the failures before had grown to", () =>
    Effect.gen(function* () {
      let phase: "down" | "starting" | "up" = "down"
      const s = yield* scripted((r) =>
        phase === "down"
          ? Effect.fail(new Unreachable({ message: "connection refused" }))
          : phase === "starting"
            ? Effect.fail(new Unreachable({ message: "https://owner answered 503: svc serve is starting (it reads its journal): call again in a moment", starting: true }))
            : Effect.succeed(r.kind === "hello" ? welcome() : ack())
      )
      const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status))
      // Down for a minute: the waits have grown to 10 s.
      yield* TestClock.adjust("60 seconds")
      phase = "starting"
      const hellos = () => s.calls.filter((c) => c.kind === "hello").map((c) => c.at)
      const before = hellos().length
      // Its next hello (within 10 s) is answered "starting".
      while (hellos().length === before) yield* TestClock.adjust("100 millis")
      const startingAt = hellos()[before]!
      phase = "up"
      // Said hello again within 1.5 s (the first wait, jitter included), and linked.
      yield* TestClock.adjust("1500 millis")
      expect(hellos().length).toBe(before + 2)
      expect(hellos()[before + 1]! - startingAt).toBeLessThanOrEqual(1_500)
      expect((yield* Ref.get(s.status)).get("k")?.phase).toBe("linked")
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect("logs losing the owner once for a run of failed retries, and linking again once", () =>
    Effect.gen(function* () {
      let away = false
      let reason = "https://owner: connect ECONNREFUSED 127.0.0.1:7443"
      const s = yield* scripted((r) => (away ? Effect.fail(new Unreachable({ message: reason })) : Effect.succeed(r.kind === "hello" ? welcome() : ack())))
      const logs: Array<string> = []
      const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status).pipe(Effect.provide(capturingLogs(logs))))
      yield* TestClock.adjust("1 second")
      expect(logs).toEqual(["INFO linked to the owner at https://owner as lab-1 (session fence 1)"])
      away = true
      yield* TestClock.adjust("60 seconds")
      expect(s.calls.filter((c) => c.kind === "hello").length).toBeGreaterThanOrEqual(4)
      expect(logs).toHaveLength(2)
      expect(logs[1]).toMatch(
        /^WARN the owner at https:\/\/owner cannot be reached: connect ECONNREFUSED 127\.0\.0\.1:7443; saying hello again in \d+\.\d s, then at most every 10\.0 s until it answers$/
      )
      expect((yield* Ref.get(s.status)).get("k")?.detail).toMatch(/^https:\/\/owner: connect ECONNREFUSED 127\.0\.0\.1:7443; retrying in \d+\.\d s$/)
      // Another reason is news.
      reason = "certificate pin mismatch"
      yield* TestClock.adjust("60 seconds")
      expect(logs).toHaveLength(3)
      expect(logs[2]).toMatch(/^WARN the owner at https:\/\/owner cannot be reached: certificate pin mismatch; /)
      away = false
      yield* TestClock.adjust("60 seconds")
      expect(logs.slice(3)).toEqual(["INFO linked to the owner at https://owner as lab-1 again (session fence 1)"])
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect("says that this machine did not run, not that the owner cannot be reached, when its own pause left a call unanswered", () =>
    Effect.gen(function* () {
      // The clock this link reads: the test's, plus a jump standing for a pause (SIGSTOP) of the
      // process, in which no timer of its ran; its sleeps are the test clock's.
      let jump = 0
      const base = yield* Effect.clock
      const paused: Clock.Clock = {
        [Clock.ClockTypeId]: Clock.ClockTypeId,
        currentTimeMillis: Effect.map(base.currentTimeMillis, (t) => t + jump),
        currentTimeNanos: Effect.map(base.currentTimeNanos, (t) => t + BigInt(jump) * 1_000_000n),
        unsafeCurrentTimeMillis: () => base.unsafeCurrentTimeMillis() + jump,
        unsafeCurrentTimeNanos: () => base.unsafeCurrentTimeNanos() + BigInt(jump) * 1_000_000n,
        sleep: (d) => base.sleep(d)
      }
      let away = false
      const s = yield* scripted((r) => (away ? Effect.fail(new Unreachable({ message: "https://owner: no answer within 15 s" })) : Effect.succeed(r.kind === "hello" ? welcome() : ack())))
      const logs: Array<string> = []
      const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status).pipe(Effect.withClock(paused), Effect.provide(capturingLogs(logs))))
      yield* TestClock.adjust("3 seconds")
      // 40 s in which this process did not run; its calls then time out.
      jump = 40_000
      away = true
      yield* TestClock.adjust("1500 millis")
      expect(logs[1]).toMatch(
        /^WARN this machine did not run for 4\d s \(its svc serve was stopped, the machine suspended or overloaded, or its clock stepped forward\): the owner at https:\/\/owner went unanswered meanwhile \(no answer within 15 s\); saying hello again in \d+\.\d s$/
      )
      // Still unanswered afterwards, with this process running: then it is the owner's.
      yield* TestClock.adjust("30 seconds")
      expect(logs[2]).toMatch(/^WARN the owner at https:\/\/owner cannot be reached: no answer within 15 s; /)
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect("logs the end of the link as an error, with its reason", () =>
    Effect.gen(function* () {
      const s = yield* scripted((r) => (r.kind === "hello" ? Effect.succeed(welcome()) : Effect.fail(new Refusal({ code: "revoked", message: "the operator revoked this worker" }))))
      const logs: Array<string> = []
      yield* Effect.either(runLink(link, s.transport, Effect.succeed(offer), s.status).pipe(Effect.provide(capturingLogs(logs))))
      expect(logs.at(-1)).toBe("ERROR the link to the owner at https://owner as lab-1 has ended (revoked): the operator revoked this worker; its work is stopped")
      // Revoked because this machine left (svc workers leave removed the link first): said, not alarmed.
      const leaving: Array<string> = []
      yield* Effect.either(runLink(link, s.transport, Effect.succeed(offer), s.status, undefined, Effect.succeed(true)).pipe(Effect.provide(capturingLogs(leaving))))
      expect(leaving.at(-1)).toBe("INFO the link to the owner at https://owner as lab-1 has ended: this machine left it (svc workers leave); its work is stopped")
      expect(leaving.some((l) => l.startsWith("ERROR"))).toBe(false)
    })
  )

  it.effect("an owner that cannot record calls now (unavailable: its disk full) is called again, as one not reachable; the link does not end", () =>
    Effect.gen(function* () {
      const full = new Refusal({ code: "unavailable", message: "the owner cannot record this now (appending to the journal: database or disk is full); nothing was changed: call again" })
      const s = yield* scripted((r, n) => (r.kind === "hello" && n <= 2 ? Effect.fail(full) : Effect.succeed(r.kind === "hello" ? welcome() : ack())))
      const logs: Array<string> = []
      const fiber = yield* Effect.fork(runLink(link, s.transport, Effect.succeed(offer), s.status).pipe(Effect.provide(capturingLogs(logs))))
      yield* TestClock.adjust("30 seconds")
      expect(s.calls.filter((c) => c.kind === "hello")).toHaveLength(3)
      expect((yield* Ref.get(s.status)).get("k")).toMatchObject({ phase: "linked" })
      // Said once (the second refusal is the same trouble), with the owner's reason.
      const said = logs.filter((l) => l.includes("503"))
      expect(said).toHaveLength(1)
      expect(said[0]).toMatch(
        /^WARN the owner at https:\/\/owner cannot be reached: answered 503: the owner cannot record this now \(appending to the journal: database or disk is full\); nothing was changed: call again; saying hello again in /
      )
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect.each([
    ["fenced", "fenced"],
    ["revoked", "revoked"],
    ["unauthenticated", "refused"]
  ] as const)("ends when %s", ([code, phase]) =>
    Effect.gen(function* () {
      const s = yield* scripted((r) => (r.kind === "hello" ? Effect.succeed(welcome()) : Effect.fail(new Refusal({ code, message: `refused: ${code}` }))))
      const exit = yield* Effect.either(runLink(link, s.transport, Effect.succeed(offer), s.status))
      expect(exit._tag === "Left" && exit.left.phase).toBe(phase)
      expect((yield* Ref.get(s.status)).get("k")?.phase).toBe(phase)
    })
  )
})

describe("the link's credential", () => {
  const ack: WorkerResponse = { kind: "ack", stop: [], newCredential: null }
  const heartbeat: WorkerRequest = { kind: "heartbeat", fence: 1, running: [] }

  it.effect("a call refused because its credential was replaced while it was in flight goes again with the new one", () =>
    Effect.gen(function* () {
      const sent: Array<string> = []
      const saved: Array<string> = []
      let transport: OwnerTransport | undefined
      // The owner knows only c3: c2's call is refused, after a claim's answer handed c3 over meanwhile.
      const send = (credential: string, _request: WorkerRequest) =>
        Effect.suspend(() => {
          sent.push(credential)
          if (credential === "c3") return Effect.succeed(ack)
          return Effect.zipRight(Effect.orDie(transport!.saveCredential("c3")), Effect.fail(new Refusal({ code: "unauthenticated", message: "this credential was replaced" })))
        })
      transport = credentialTransport(send, "c2", (c) => Effect.sync(() => void saved.push(c)))
      expect(yield* transport.call(heartbeat)).toEqual(ack)
      expect({ sent, saved }).toEqual({ sent: ["c2", "c3"], saved: ["c3"] })
    })
  )

  it.effect("a refusal of the credential it still holds is not sent again, and a credential is used only once saved", () =>
    Effect.gen(function* () {
      const sent: Array<string> = []
      const transport = credentialTransport(
        (credential) => Effect.suspend(() => (sent.push(credential), Effect.fail(new Refusal({ code: "unauthenticated", message: "not known" })))),
        "c1",
        () => Effect.fail(new Error("disk full")).pipe(Effect.orDie)
      )
      expect((yield* Effect.flip(transport.call(heartbeat)))).toMatchObject({ code: "unauthenticated" })
      expect(sent).toEqual(["c1"])
      yield* Effect.exit(transport.saveCredential("c9"))
      yield* Effect.flip(transport.call(heartbeat))
      expect(sent).toEqual(["c1", "c1"])
    })
  )

  it.effect("a second rotation not saved either says the link's credential no longer works (it said the old one works until the grace's end)", () =>
    Effect.gen(function* () {
      const logs: Array<string> = []
      const status = yield* Ref.make<ReadonlyMap<string, LinkStatus>>(new Map())
      let calls = 0
      const transport = credentialTransport(
        (_credential, request) =>
          Effect.sync(() => {
            calls++
            const handOver = calls === 2 ? "svc_wk_second" : calls === 4 ? "svc_wk_third" : undefined
            return request.kind === "hello"
              ? welcome()
              : { kind: "ack" as const, stop: [], newCredential: handOver === undefined ? null : { credential: handOver, previousValidUntil: `2026-01-01T00:0${calls}:00Z` } }
          }),
        "svc_wk_first",
        () => Effect.fail(new CredentialNotSaved({ message: "/home/x/.svc/links/k.json: EROFS: read-only file system" }))
      )
      const fiber = yield* Effect.fork(runLink(link, transport, Effect.succeed(offer), status).pipe(Effect.provide(capturingLogs(logs))))
      yield* TestClock.adjust("30 seconds")
      expect(calls).toBeGreaterThanOrEqual(4)
      const errors = logs.filter((l) => l.startsWith("ERROR"))
      expect(errors).toHaveLength(2)
      expect(errors[0]).toContain("and the link's old one works until 2026-01-01T00:02:00Z")
      expect(errors[1]).toBe(
        "ERROR the owner at https://owner rotated lab-1's credential again, and the new one could not be saved in its link either: /home/x/.svc/links/k.json: EROFS: read-only file system; this process uses it, and the credential the link holds no longer works: make the link writable (the new one is saved as soon as it can be; a restart before that is refused, and the machine must join again)"
      )
      expect((yield* Ref.get(status)).get("k")?.credentialNotSaved).toBe(
        "the credentials the owner handed over could not be saved (/home/x/.svc/links/k.json: EROFS: read-only file system): the link's own is from before the last two rotations, and a restart now will be refused"
      )
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect("a handed-over credential that cannot be saved (a read-only link) is used by this process all the same, said as an error once, shown in its status, and saved once the link can be written", () =>
    Effect.gen(function* () {
      const sent: Array<string> = []
      const logs: Array<string> = []
      const status = yield* Ref.make<ReadonlyMap<string, LinkStatus>>(new Map())
      const handOver = { credential: "svc_wk_new", previousValidUntil: "2026-01-01T00:05:00Z" }
      let calls = 0
      let writable = false
      const saves: Array<string> = []
      const transport = credentialTransport(
        (credential, request) =>
          Effect.sync(() => {
            sent.push(`${request.kind}:${credential}`)
            calls++
            return request.kind === "hello" ? welcome() : { kind: "ack" as const, stop: [], newCredential: calls === 2 ? handOver : null }
          }),
        "svc_wk_old",
        // Read-only until the operator makes the link writable (as the error tells them to).
        (credential) => Effect.suspend(() => {
          saves.push(credential)
          return writable ? Effect.void : Effect.fail(new CredentialNotSaved({ message: "/home/x/.svc/links/k.json: EROFS: read-only file system" }))
        })
      )
      const fiber = yield* Effect.fork(runLink(link, transport, Effect.succeed(offer), status).pipe(Effect.provide(capturingLogs(logs))))
      yield* TestClock.adjust("12 seconds")
      // Linked still, on the new credential.
      expect((yield* Ref.get(status)).get("k")).toMatchObject({
        phase: "linked",
        credentialNotSaved: "the credential the owner handed over could not be saved (/home/x/.svc/links/k.json: EROFS: read-only file system): a restart after 2026-01-01T00:05:00Z will be refused"
      })
      expect(sent.at(-1)).toMatch(/:svc_wk_new$/)
      const error = "ERROR the owner at https://owner rotated lab-1's credential, but the new one could not be saved in its link: /home/x/.svc/links/k.json: EROFS: read-only file system; this process uses it, and the link's old one works until 2026-01-01T00:05:00Z: make the link writable before then (a restart after it is refused, and the machine must join again)"
      expect(logs.filter((l) => l.startsWith("ERROR"))).toEqual([error])
      // Tried again with the calls after it, no more often than every 5 s, and said once only.
      yield* TestClock.adjust("30 seconds")
      expect(saves.length).toBeGreaterThan(2)
      expect(saves.length).toBeLessThanOrEqual(1 + 42 / 5)
      expect(new Set(saves)).toEqual(new Set(["svc_wk_new"]))
      expect(logs.filter((l) => l.startsWith("ERROR"))).toEqual([error])
      expect((yield* Ref.get(status)).get("k")?.credentialNotSaved).toBeDefined()
      // The link made writable: the next try saves it, the status says nothing more of it, and it is said.
      writable = true
      yield* TestClock.adjust("10 seconds")
      expect((yield* Ref.get(status)).get("k")?.credentialNotSaved).toBeUndefined()
      expect(logs).toContain("INFO the credential the owner at https://owner handed over to lab-1 is saved in its link now")
      const tries = saves.length
      yield* TestClock.adjust("30 seconds")
      expect(saves.length).toBe(tries)
      expect(logs.join("\n")).not.toContain("svc_wk_new")
      yield* Fiber.interrupt(fiber)
    })
  )
})
