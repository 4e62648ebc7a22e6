/**
 * `svc serve`: the installation's runtime in the foreground. As an owner: the HTTPS worker
 * route, the journal and its projections, checkpoints; as a worker: one link per owner this
 * machine works for. The admin API (Unix socket) serves the CLI. Stops cleanly on SIGINT or
 * SIGTERM: servers close, links end, a last checkpoint is written.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as nodePath from "node:path"
import type { AddressInfo } from "node:net"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Either from "effect/Either"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as CheckpointSchedule from "../../app/journal/CheckpointSchedule.js"
import { layerFrom as projectionsFrom, Projections } from "../../app/journal/Projections.js"
import { OUTPUT_LIMIT_VARIABLE, parseOutputLimit } from "../../app/runs/OutputLimit.js"
import { parseRetainedRuns, RETAINED_RUNS_VARIABLE } from "../../app/runs/Retention.js"
import { initialStateRetaining } from "../../domain/journal/OwnerState.js"
import { CredentialNotSaved, credentialTransport, offerChangeBell, runLink, type LinkStatus } from "../../app/workers/Link.js"
import { computeOffer, type Offer } from "../../app/workers/Offer.js"
import { makeSlots } from "../../app/workers/Slots.js"
import { OwnerHost } from "../../app/runs/Dispatcher.js"
import { resolveJob } from "../../app/runs/JobCatalog.js"
import { layerWithRuns as ownerLayer, Owner, OwnerAddress } from "../../app/workers/Owner.js"
import * as Presence from "../../app/workers/Presence.js"
import { HostPrograms } from "../../app/bags/BagStore.js"
import * as HostProgramsLive from "../bags/HostPrograms.js"
import { Executor, type ExecutorService } from "../../app/runs/Executor.js"
import * as ChildExecutor from "../runs/ChildExecutor.js"
import * as FileRunFiles from "../runs/FileRunFiles.js"
import * as NodeBagDirectory from "../bags/NodeBagDirectory.js"
import * as FileBagStore from "../bags/FileBagStore.js"
import { serveAdmin } from "../http/AdminApi.js"
import { adminRoutes, interruptAdminCalls } from "./AdminRoutes.js"
import { claimHome } from "./HomeStart.js"
import { fileIdentityOf, sameFile, watchHome } from "./HomeWatch.js"
import { listen as listenForStop, type StopSignal } from "./StopSignals.js"
import { guardJournal } from "./JournalGuard.js"
import { createServer, makeHandler, startingHandler } from "../http/WorkerRoute.js"
import { LOW_OPEN_FILES, openFilesLimit } from "../http/ConnectionCap.js"
import * as NodeHashing from "../journal/NodeHashing.js"
import { layer as journalLayer } from "../journal/SqliteJournal.js"
import { storePath } from "../journal/StoreFile.js"
import * as ManifestSourceLive from "../manifest/ManifestSourceLive.js"
import { runtimeEnv, sayWhereSet } from "../SvcConfig.js"
import { layerAt as svcHomeAt } from "../SvcHome.js"
import { certificateValidity, loadOrCreate } from "../tls/OwnerCertificate.js"
import { noteServed } from "../tls/Succession.js"
import { carriedNote, makeSteadyClock, type SteadyClock } from "./SteadyClock.js"
import { linkKeys, linksDir, readLinkFiles, rewriteLink, unreadableLinkText } from "../workers/LinkStore.js"
import * as NodeEntropy from "../workers/NodeEntropy.js"
import { followingCaller } from "../workers/OwnerClient.js"
import { sessionMemoryAt } from "../workers/SessionMemory.js"
import { killAllNow } from "../runs/Child.js"
import { reap } from "../runs/Leftovers.js"
import { reasonText } from "../../app/FailureText.js"

/** `executor` counting, in `inUse`, the attempts running from each bag directory while they run. */
const inUseTracked = (executor: ExecutorService, inUse: Map<string, number>): ExecutorService => ({
  run: (spec) =>
    Effect.acquireUseRelease(
      Effect.sync(() => void inUse.set(spec.bagDir, (inUse.get(spec.bagDir) ?? 0) + 1)),
      () => executor.run(spec),
      () =>
        Effect.sync(() => {
          const left = (inUse.get(spec.bagDir) ?? 1) - 1
          if (left > 0) inUse.set(spec.bagDir, left)
          else inUse.delete(spec.bagDir)
        })
    )
})

/** Where the jobs' secrets are kept on this machine: one file per name (docs/executors.md, "Secrets"). */
export const secretsDir = (home: string) => nodePath.join(home, "secrets")
/** Where the children running now are noted (Leftovers.ts). */
export const childrenDir = (home: string) => nodePath.join(home, "children")
/** Between SIGTERM and SIGKILL for a child a killed runtime left (a job's own stop grace). */
const LEFTOVER_GRACE_MS = 5_000

/** `logged`: the log has said it already (with its time); the command only exits 1. */
/**
 * Ends the process, once its work is done, with process.exit, which closes nothing: Node closing
 * what is left open at its natural end removes files by their paths (an SQLite journal, a
 * socket), which are another runtime's when this one's home was taken (HomeWatch.ts).
 */
const endClosingNothing = () => void process.once("beforeExit", (code) => process.exit(process.exitCode ?? code))

export class ServeError extends Data.TaggedError("ServeError")<{ readonly message: string; readonly logged?: boolean }> {}

export interface ServeOptions {
  readonly home: string
  readonly host: string
  readonly port: number
  readonly publicUrl: string | undefined
  readonly tls: { readonly certFile: string; readonly keyFile: string } | undefined
  /** Go on from a journal older than its mark (a backup restored), closing again what the mark says was closed. */
  readonly restored?: boolean
}

const listen = (server: import("node:net").Server, port: number, host: string) =>
  Effect.async<AddressInfo, ServeError>((resume) => {
    server.once("error", (e: NodeJS.ErrnoException) =>
      resume(Effect.fail(new ServeError({ message: e.code === "EADDRINUSE" ? `${host}:${port} is already in use (another svc serve, or another program): stop it, or listen elsewhere with --listen HOST:PORT` : `cannot listen on ${host}:${port}: ${e.message}` })))
    )
    server.listen(port, host, () => resume(Effect.succeed(server.address() as AddressInfo)))
  })

const closeServer = (server: import("node:net").Server) =>
  Effect.async<void>((resume) => {
    server.close(() => resume(Effect.void))
    ;(server as import("node:http").Server).closeAllConnections?.()
  })

const wrap = <A>(what: string, f: () => Promise<A>) =>
  Effect.tryPromise({ try: f, catch: (e) => new ServeError({ message: `${what}: ${e instanceof Error ? e.message : String(e)}` }) })

/**
 * Runs until SIGINT or SIGTERM. A signal while it starts stops the start where it is (what it
 * opened is closed, in reverse order, as at a stop); the stop of a job a killed runtime left is
 * finished first, so that its note and the log tell the truth (StopSignals.ts).
 */
export const serve = (options: ServeOptions) =>
  Effect.suspend(() => {
    // The runtime's time never goes back: a step back of the machine's clock would lengthen every
    // time rule by the step (SteadyClock.ts). Each step found is said once, at the next second.
    const stepsBack: Array<number> = []
    const clock = makeSteadyClock({ stepped: (ms) => void stepsBack.push(ms) })
    const sayStepsBack = Effect.suspend(() =>
      Effect.forEach(
        stepsBack.splice(0),
        (ms) =>
          Effect.logWarning(
            `this machine's clock went back ${(ms / 1000).toFixed(1)} s: svc serve goes on from the time it had (${(ms / 1000).toFixed(1)} s ahead of the clock until it stops, as the journal's times are), so that no time rule lasts longer for it (docs/operations.md, "The machine's clock")`
          ),
        { discard: true }
      )
    )
    return serveSteadily(options, sayStepsBack, clock).pipe(Effect.withClock(clock))
  })

const serveSteadily = (options: ServeOptions, sayStepsBack: Effect.Effect<void>, clock: SteadyClock) =>
  Effect.scoped(
    Effect.gen(function* () {
      yield* Effect.forkScoped(Effect.repeat(sayStepsBack, Schedule.spaced("1 second")))
      const stop = yield* listenForStop(killAllNow)
      // Set once the home is no longer the one this runtime started in (HomeWatch.ts): what the
      // stop would write or remove by path there is then another runtime's.
      const taken = { value: false }
      const early = yield* Effect.raceFirst(
        start(options, taken, clock).pipe(Effect.map(Either.right)),
        Deferred.await(stop).pipe(Effect.map((signal: StopSignal) => Either.left(signal)))
      )
      if (Either.isLeft(early)) {
        yield* Console.log(`svc serve: ${early.left} while starting: stopping`)
        return
      }
      // Running until a stop signal, or until its home is taken from under it (HomeWatch.ts).
      const ended = yield* Effect.raceFirst(Deferred.await(stop).pipe(Effect.map(Either.right)), early.right.pipe(Effect.map(Either.left)))
      if (Either.isLeft(ended)) {
        taken.value = true
        endClosingNothing()
        yield* Effect.logError(ended.left)
        return yield* new ServeError({ message: ended.left, logged: true })
      }
      const signal = ended.right
      // A second signal while it stops (a job that ignores SIGTERM holds the stop 5 s: the moment
      // an operator presses Ctrl-C again) ends the process at once, saying so, its jobs still
      // running killed first (StopSignals.ts).
      yield* Console.log(`svc serve: ${signal}: stopping (its jobs are given 5 s to end; ${signal} again stops at once)`)
    })
  )

/** Everything a start opens, in the scope of `serve`: answers once the runtime runs. */
const start = (options: ServeOptions, taken: { readonly value: boolean }, clock: SteadyClock) =>
  Effect.gen(function* () {
    // The home made, checked and claimed before anything of it is opened (HomeStart.ts).
    yield* claimHome(options.home, taken).pipe(Effect.mapError((e) => new ServeError({ message: e.message })))
    // Children a runtime killed before this one left running: stopped before anything runs here,
    // so that this runtime's "ceased" and its workers' hello are true (Leftovers.ts).
    // Not cut short by a stop signal: the notes and the log would not say what was stopped.
    yield* Effect.uninterruptible(
      Effect.gen(function* () {
        for (const r of yield* wrap("stopping children a killed runtime left", () => reap(childrenDir(options.home), LEFTOVER_GRACE_MS))) {
          const since = r.note.at > 0 ? ` since ${new Date(r.note.at).toISOString()}` : ""
          yield* r.kind === "stopped"
            ? Effect.logWarning(`stopped ${r.note.name} (pid ${r.note.pid}, running${since}): the svc serve that started it was killed without stopping it`)
            : Effect.logWarning(`${r.note.name} (pid ${r.note.pid}${since}), started by an svc serve that was killed, may still run: this system does not say whether that pid is still that process, so it was left alone`)
        }
      })
    )
    // Its messages name where the setting came from (svc.yaml, or the environment).
    const env = yield* wrap("reading the runtime's settings", () => runtimeEnv(options.home))
    const settings = { env, os: process.platform, arch: process.arch, capabilities: ["node", "process"] }
    const bagLayers = Layer.mergeAll(NodeBagDirectory.layer, FileBagStore.layer.pipe(Layer.provide(svcHomeAt(options.home))), ManifestSourceLive.layer, HostProgramsLive.layer)
    const offerNow = computeOffer(settings).pipe(Effect.provide(bagLayers))
    // A bad SVC_WORKFLOW_CAPACITY or label stops the start with its message.
    const firstOffer = yield* offerNow.pipe(Effect.mapError((e) => new ServeError({ message: sayWhereSet(options.home, e.message) })))
    // And so does a bad SVC_WORKFLOW_RETAINED_RUNS.
    const retain = yield* Effect.mapError(parseRetainedRuns(env[RETAINED_RUNS_VARIABLE]), (message) => new ServeError({ message: sayWhereSet(options.home, message) }))
    // And a bad SVC_WORKFLOW_OUTPUT_LIMIT: what this machine keeps of each stream of an attempt's
    // output, its own jobs' and, on an owner, what its workers send.
    const outputLimit = yield* Effect.mapError(parseOutputLimit(env[OUTPUT_LIMIT_VARIABLE]), (message) => new ServeError({ message: sayWhereSet(options.home, message) }))
    // One arbiter of this machine's slots: its own runs and the work it does for other owners.
    const slots = yield* makeSlots(firstOffer.capacity)
    const resolve = (address: string) => resolveJob(address).pipe(Effect.provide(bagLayers))
    // Which installed copies of bags the jobs running here run from (their bag directory, with how
    // many attempts): `svc bag install|remove` will not replace or remove a copy in use (BagInUse).
    const inUse = new Map<string, number>()
    const executor = inUseTracked(ChildExecutor.make({ secretsDir: secretsDir(options.home), childrenDir: childrenDir(options.home), outputLimit }), inUse)
    const ownerHost = Layer.succeed(OwnerHost, {
      capacity: firstOffer.capacity,
      labels: firstOffer.labels,
      capabilities: settings.capabilities,
      bins: (programs) =>
        Effect.flatMap(HostPrograms, (h) => Effect.filter(programs, (p) => Effect.map(h.which(p), (found) => found !== undefined))).pipe(Effect.provide(HostProgramsLive.layer)),
      resolve,
      withSlot: slots.withSlot
    })

    const tls = yield* wrap("loading the TLS certificate", () => loadOrCreate(options.home, options.tls))
    // Set when the start refuses its journal (JournalGuard.ts): nothing more is written into it.
    const journalRefused = { value: false }
    const server = createServer({ cert: tls.cert, key: tls.key, host: options.host, port: options.port }, startingHandler)
    const address = yield* listen(server, options.port, options.host)
    // A low limit of open files is said at start: at it, the route, the jobs and the admin socket
    // fail for want of descriptors, and the operator's CLI cannot reach the runtime.
    const openFiles = openFilesLimit()
    if (openFiles !== undefined && openFiles < LOW_OPEN_FILES) {
      yield* Effect.logWarning(
        `this process may have at most ${openFiles} files open (ulimit -n): the worker route holds at most ${server.maxConnections} connections, and each running job takes 5 while it starts; raise it for more than a few workers (docs/operations.md, "Open files")`
      )
    }
    // Closed whatever stops the start from here on (an open listener would keep the process
    // alive), and once running, before the owner's runtime closes (below).
    const closeRoute = yield* Effect.cached(closeServer(server))
    yield* Effect.addFinalizer(() => closeRoute)
    const shownHost = options.host === "0.0.0.0" || options.host === "::" ? os.hostname() : options.host.includes(":") ? `[${options.host}]` : options.host
    const url = options.publicUrl ?? `https://${shownHost}:${address.port}`

    const ownerStack = ownerLayer.pipe(
      Layer.provideMerge(CheckpointSchedule.layer(undefined, () => !taken.value, () => journalRefused.value).pipe(Layer.provideMerge(projectionsFrom(initialStateRetaining(retain))))),
      Layer.provideMerge(
        Layer.mergeAll(
          // The runtime's time goes on from the journal's last event when this machine's clock
          // is behind it (a step back the last runtime had absorbed): no time goes back across a
          // restart either (SteadyClock.ts).
          journalLayer(storePath(options.home), {
            lastRecordedAt: (at) =>
              Effect.suspend(() => {
                const note = carriedNote(clock.goOnFrom(at), at)
                return note === undefined ? Effect.void : Effect.logWarning(note)
              })
          }),
          NodeHashing.layer,
          NodeEntropy.layer,
          Layer.succeed(OwnerAddress, { url, fingerprint: tls.fingerprint }),
          Layer.succeed(Executor, executor),
          FileRunFiles.layer(`${options.home}/runs`, outputLimit),
          ownerHost
        )
      )
    )
    // The owner's log of workers coming and going, over the same projections and freshness.
    const owner = Presence.layer.pipe(Layer.provideMerge(ownerStack))
    // A failure or a defect (an event a fold cannot take, say) ends the start with its message.
    const runtime = yield* Layer.toRuntime(owner).pipe(
      Effect.catchAllCause((cause) => {
        return new ServeError({ message: `starting the owner from ${storePath(options.home)}: ${reasonText(Cause.squash(cause))}` })
      })
    )
    // The journal and lock file this runtime opened, noted now: noted after the start's last line,
    // a home removed right after that line (as soon as it said it was running) stopped the start
    // with a bare ENOENT, and one replaced in between would have been taken for its own.
    const homeGone = yield* watchHome(options.home).pipe(Effect.mapError((message) => new ServeError({ message })))
    // A journal older than the one this home's owner wrote (a backup restored) is refused unless
    // --restored says to go on from it; its mark kept from here on (JournalGuard.ts).
    yield* guardJournal(options.home, storePath(options.home), runtime, { restored: options.restored === true, taken: () => taken.value }).pipe(
      // Refused, the copy it refused is left as it was: no last checkpoint written into it.
      Effect.tapError(() => Effect.sync(() => void (journalRefused.value = true))),
      Effect.mapError((message) => new ServeError({ message }))
    )
    // A certificate other than the one served before is a change its workers must be able to
    // follow: signed with the key of the one before (Succession.ts). Noted once this start is
    // sure to serve it (a start that failed signed, for good, a certificate never served).
    const noted = yield* wrap("noting the TLS certificate served", () => noteServed(options.home, tls, new Date()))
    // Journaled for the audit (svc audit, a `certificate` row). A crash between the two leaves the
    // change signed and not journaled: the next start finds the same certificate served.
    const change = noted.served.kind === "changed" ? { from: noted.served.step.from, signed: true } : noted.served.kind === "unsigned" ? { from: noted.served.from, signed: false } : undefined
    if (change !== undefined) {
      yield* Context.get(runtime.context, Owner)
        .noteCertificateChange(change.from, tls.fingerprint, change.signed)
        .pipe(Effect.catchAll((e) => Effect.logWarning(`the change of the TLS certificate could not be journaled (${e.message}): svc audit does not list it`)))
    }
    server.removeAllListeners("request")
    const handler = makeHandler(runtime, { steps: noted.steps, current: tls.fingerprint })
    server.on("request", handler)
    // Calls still running (a claim's long poll) end with the runtime instead of holding the process.
    yield* Effect.addFinalizer(() => Effect.andThen(Effect.promise(handler.interruptAll), closeRoute))

    // Completed, and made anew, when `svc bag install|remove` says this machine's bags changed
    // (the admin socket's /bags/changed): every link advertises at once.
    const { changes: offerChanges, ring: sayBagsChanged } = offerChangeBell()
    // Worker side: one link per owner this machine works for; new links are picked up.
    const statuses = yield* Ref.make<ReadonlyMap<string, LinkStatus>>(new Map())
    const running = new Map<string, { readonly workerId: string; readonly url: string; readonly name: string; readonly fiber: Fiber.RuntimeFiber<unknown, unknown> }>()
    /** Where a link keeps its copy of the output of the attempts it runs. */
    const workDir = (key: string) => nodePath.join(options.home, "work", key)
    // Output left for owners this machine no longer has a link to (its file was removed while
    // no runtime ran): nothing can report it.
    const linked = new Set(yield* wrap("reading links", () => linkKeys(options.home)))
    for (const key of yield* wrap("reading work", () => fs.readdir(nodePath.join(options.home, "work")).catch(() => [] as Array<string>))) {
      if (!linked.has(key)) yield* Effect.ignore(wrap("removing work", () => fs.rm(workDir(key), { recursive: true, force: true })))
    }
    const unreadableSaid = new Map<string, string>()
    const startLinks = Effect.gen(function* () {
      // A link whose file was removed ends (the attempts it runs are stopped), with its output.
      const present = new Set(yield* wrap("reading links", () => linkKeys(options.home)))
      for (const [key, gone] of running) {
        if (present.has(key)) continue
        // Out of `running` once its work has stopped (interrupting waits for it): `svc workers
        // leave` reads that to tell the owner this machine runs nothing for it.
        yield* Fiber.interrupt(gone.fiber)
        running.delete(key)
        // Interrupted, the link says nothing of its end: said here, once.
        yield* Effect.logInfo(`the link to the owner at ${gone.url} as ${gone.name} was removed (svc workers leave): it has ended, and what it ran for that owner is stopped`)
        yield* Ref.update(statuses, (m) => {
          const next = new Map(m)
          next.delete(key)
          return next
        })
        yield* Effect.ignore(wrap("removing work", () => fs.rm(workDir(key), { recursive: true, force: true })))
      }
      const files = yield* wrap("reading links", () => readLinkFiles(options.home))
      // A link file that cannot be used is said, once per change of what is wrong with it (it was
      // skipped without a word, and the machine silently stopped working for that owner).
      for (const u of files.unreadable) {
        if (unreadableSaid.get(u.key) === u.problem) continue
        unreadableSaid.set(u.key, u.problem)
        yield* Effect.logWarning(unreadableLinkText(u))
      }
      for (const key of [...unreadableSaid.keys()]) if (!files.unreadable.some((u) => u.key === key)) unreadableSaid.delete(key)
      for (const { key, link } of files.links) {
        const current = running.get(key)
        if (current !== undefined && current.workerId === link.workerId) continue
        // `svc workers join` again (after a revocation, say) wrote a new identity: the old link,
        // ended or not, gives way to it (its work stops), and the new one says hello.
        if (current !== undefined) yield* Fiber.interrupt(current.fiber)
        // What this runtime changes in the link's file (a credential handed over, the owner's
        // certificate followed to a new one) is written into what the file holds then, and only
        // while it is there: a link removed meanwhile (svc workers leave) stays removed.
        const caller = followingCaller({ url: link.url, fingerprint: link.fingerprint, certificate: link.certificate }, (next) =>
          Effect.tryPromise(() => rewriteLink(options.home, key, link.workerId, (now) => ({ ...now, fingerprint: next.fingerprint, certificate: next.certificate }))).pipe(
            Effect.asVoid,
            // Used all the same by this runtime; the next start follows the change again.
            Effect.catchAll((e) => Effect.logWarning(`the owner's new certificate could not be saved in this machine's link to it (${e.error instanceof Error ? e.error.message : String(e.error)}): this runtime uses it, the next start follows the change again`))
          )
        )
        const transport = credentialTransport(
          caller.call,
          link.credential,
          (next) =>
            Effect.tryPromise({
              try: () => rewriteLink(options.home, key, link.workerId, (now) => ({ ...now, credential: next })),
              // Node's message names the file and the reason, never what was written.
              catch: (e) => new CredentialNotSaved({ message: e instanceof Error ? e.message : String(e) })
            }).pipe(Effect.asVoid)
        )
        const side = {
          slots,
          resolve,
          executor,
          files: FileRunFiles.make(workDir(key), outputLimit),
          claimWaitSeconds: 20,
          heartbeatEvery: Duration.seconds(3)
        }
        // `svc workers leave` removes the link file before it tells the owner.
        const left = Effect.promise(() => fs.access(nodePath.join(linksDir(options.home), `${key}.json`)).then(() => false, () => true))
        const fiber = yield* runLink(
          { key, url: link.url, workerId: link.workerId, name: link.name },
          transport,
          offerNow.pipe(Effect.orDie) as Effect.Effect<Offer>,
          statuses,
          side,
          left,
          sessionMemoryAt(options.home, key),
          offerChanges
        ).pipe(
          // The link logs its end itself (Link.ts), with the reason. Ended by the runtime's stop
          // with every other link at once (below), not one after the other by the scope.
          Effect.ignore,
          Effect.forkDaemon
        )
        running.set(key, { workerId: link.workerId, url: link.url, name: link.name, fiber })
      }
    })
    const linking = yield* startLinks.pipe(Effect.catchAll((e) => Console.error(`svc: ${e.message}`)), Effect.repeat(Schedule.spaced("2 seconds")), Effect.forkScoped)
    // At the stop, every link ends at once (its work stopped, its bye said): ended one after the
    // other, an owner that does not answer held the others' jobs running through its bye.
    yield* Effect.addFinalizer(() => Effect.zipRight(Fiber.interrupt(linking), Effect.suspend(() => Fiber.interruptAll([...running.values()].map((r) => r.fiber)))))

    const routes = adminRoutes(runtime, {
      actor: `operator ${os.userInfo().username}`,
      journalFile: storePath(options.home),
      links: async () => {
        const { links, unreadable } = await readLinkFiles(options.home)
        const status = await Effect.runPromise(Ref.get(statuses))
        // Times as ISO strings, as every --json output gives them.
        // What each link does now, all read at this one moment (not each as of its last advertisement).
        const shown = (s: LinkStatus | undefined) => {
          if (s === undefined) return null
          const { live, ...rest } = s
          return { ...rest, ...(live === undefined ? {} : live()), lastAdvertisedAt: s.lastAdvertisedAt === null ? null : new Date(s.lastAdvertisedAt).toISOString() }
        }
        return {
          links: links.map(({ key, link }) => ({ key, url: link.url, workerId: link.workerId, name: link.name, status: shown(status.get(key)) })),
          unreadable
        }
      },
      // The links whose work may still run here: a link removed (svc workers leave) is out of it
      // once its work has stopped, which the CLI waits for before it tells the owner so.
      activeLinks: async () => [...running.keys()],
      bagsChanged: sayBagsChanged,
      bagsInUse: () => [...inUse].map(([dir, attempts]) => ({ dir, attempts }))
    })
    const admin = yield* wrap("opening the admin socket", () => serveAdmin(options.home, routes))
    const socket = nodePath.join(options.home, "admin.sock")
    const ours = fileIdentityOf(socket)
    yield* Effect.addFinalizer(() =>
      Effect.promise(interruptAdminCalls).pipe(
        Effect.andThen(
          Effect.sync(() => {
            const now = fileIdentityOf(socket)
            return !(ours instanceof Error) && !(now instanceof Error) && sameFile(now, ours)
          })
        ),
        // Closing a socket server removes the file at its path (libuv does, and Node closes what
        // is left open as the process ends): when that is no longer this runtime's socket (its
        // home was removed and another svc serve started on the same path, HomeWatch.ts), the
        // server is let go, and the process ends with process.exit, which closes nothing.
        Effect.flatMap((still) =>
          still
            ? Effect.andThen(closeServer(admin), Effect.promise(() => fs.rm(socket, { force: true })))
            : Effect.sync(() => {
                ;(admin as import("node:http").Server).closeAllConnections?.()
                admin.unref()
                endClosingNothing()
              })
        )
      )
    )

    yield* Console.log(`svc serve: owner route ${url}/api/worker (listening on ${options.host}:${address.port})`)
    const { started } = Context.get(runtime.context, Projections)
    // Why the whole journal was folded, whenever there was one to fold (journal.md, "Start-up from a snapshot").
    const why = started.note ?? (started.events === 0 ? null : "no snapshot is stored (none written yet: a journal from an svc before snapshots, or a runtime killed before its first checkpoint)")
    yield* Console.log(
      started.snapshot === null
        ? `svc serve: projections rebuilt from the whole journal (${started.events} event${started.events === 1 ? "" : "s"})${why === null ? "" : `: ${why}`}`
        : `svc serve: projections from the snapshot at sequence ${started.snapshot} and the ${started.events} events after it`
    )
    yield* Console.log(`svc serve: TLS certificate sha256 ${tls.fingerprint}`)
    // A certificate out of its validity is refused by every worker (they check the one they pin).
    const validity = certificateValidity(tls.cert, Date.now())
    if (validity !== undefined) yield* Effect.logWarning(validity)
    if (change?.signed === true) {
      yield* Effect.logInfo(
        `the TLS certificate changed since the last start (sha256 ${change.from} before): the change is signed with the key of the one before, so the workers linked to this owner follow it at their next call (docs/protocol.md, "When the owner's certificate changes")`
      )
    } else if (change !== undefined) {
      yield* Effect.logWarning(
        `the TLS certificate changed since the last start (sha256 ${change.from} before), and the change could not be signed with the key of the one before: workers linked to this owner cannot follow it, and must join again with a new token`
      )
    }
    yield* Console.log(`svc serve: admin socket ${options.home}/admin.sock; stop with Ctrl-C`)
    // Completes, saying what became of it, once the home is no longer the one it started in.
    return homeGone
  })

