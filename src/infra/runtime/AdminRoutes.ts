/**
 * What the admin socket answers (docs/protocol.md, "The admin API"): each route calls one
 * owner service and answers its result, or its refusal as `{code, message}` (409), or 500 for
 * a bug. The operator is the actor of what they do.
 */
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import { jsonInTurns } from "../../app/journal/JsonInTurns.js"
import { Projections } from "../../app/journal/Projections.js"
import { Dispatcher } from "../../app/runs/Dispatcher.js"
import { Owner } from "../../app/workers/Owner.js"
import { canonicalState } from "../../domain/journal/OwnerState.js"
import { withoutSecrets } from "../../domain/workers/Secrets.js"
import { JsonText, type AdminRoute } from "../http/AdminApi.js"
import { issuesText } from "../schema/Issues.js"

/**
 * What each POST route takes: its fields and their types, nothing else. A body a script got
 * wrong is refused (400, naming the field) rather than read with the wrong parts left out: an
 * invite's `scope` given as a string, or its `expires` misspelt, made an invite for every job
 * that never expires, the widest there is.
 */
const Names = Schema.Array(Schema.String)
const bodies = {
  "/invite": Schema.Struct({
    scope: Schema.optional(Names),
    expiresInMs: Schema.optional(Schema.NullOr(Schema.Number.pipe(Schema.finite()))),
    name: Schema.optional(Schema.NullOr(Schema.String))
  }),
  "/rotate": Schema.Struct({ worker: Schema.String }),
  "/revoke": Schema.Struct({ worker: Schema.String }),
  "/release": Schema.Struct({ worker: Schema.String, force: Schema.optional(Schema.Boolean) }),
  "/runs/submit": Schema.Struct({ address: Schema.String, input: Schema.optional(Schema.Unknown), prefer: Schema.optional(Names), key: Schema.optional(Schema.String) }),
  "/runs/list": Schema.Struct({ states: Schema.optional(Names), limit: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.nonNegative())) }),
  "/runs/show": Schema.Struct({ run: Schema.String }),
  "/runs/stop": Schema.Struct({ run: Schema.String }),
  "/runs/wait": Schema.Struct({ run: Schema.String, ms: Schema.optional(Schema.Number), seen: Schema.optional(Schema.String) })
} as const

/** The body as its route takes it, or the 400 answer saying what is wrong with it. */
const parsed = <P extends keyof typeof bodies>(path: P, body: unknown): { readonly ok: Schema.Schema.Type<(typeof bodies)[P]> } | { readonly refused: readonly [number, unknown] } => {
  const decoded = Schema.decodeUnknownEither(bodies[path] as unknown as Schema.Schema<Schema.Schema.Type<(typeof bodies)[P]>, unknown>, { onExcessProperty: "error" })(body ?? {})
  if (Either.isRight(decoded)) return { ok: decoded.right }
  return { refused: [400, { code: "bad-request", message: withoutSecrets(`the body of POST ${path} is not what it takes: ${issuesText(decoded.left.issue, 3)}`) }] as const }
}

/** A route's handler over its checked body. */
const checked =
  <P extends keyof typeof bodies>(path: P, handle: (body: Schema.Schema.Type<(typeof bodies)[P]>) => Promise<readonly [number, unknown]>) =>
  (body: unknown): Promise<readonly [number, unknown]> => {
    const b = parsed(path, body)
    return "refused" in b ? Promise.resolve(b.refused) : handle(b.ok)
  }

const inflight = new Set<Fiber.RuntimeFiber<unknown, unknown>>()

/** Interrupts the admin calls still running (a `runs wait`): the runtime is stopping. */
export const interruptAdminCalls = () => Effect.runPromise(Fiber.interruptAll(inflight))

export const adminRoutes = (
  runtime: Runtime.Runtime<Owner | Projections | Dispatcher>,
  options: {
    readonly actor: string
    readonly links: () => Promise<{ readonly links: ReadonlyArray<unknown>; readonly unreadable: ReadonlyArray<unknown> }>
    readonly activeLinks: () => Promise<ReadonlyArray<string>>
    /** `svc bag install|remove` changed this machine's bags: its links advertise at once (the owner's round is asked for here). */
    readonly bagsChanged?: () => void
    /** The bag directories jobs running here run from, with how many attempts each (svc bag install|remove ask). */
    readonly bagsInUse?: () => ReadonlyArray<{ readonly dir: string; readonly attempts: number }>
    /** The journal's file, named in a refusal the journal caused (a full disk: which disk). */
    readonly journalFile?: string
  }
): ReadonlyArray<AdminRoute> => {
  const fork = Runtime.runFork(runtime)
  const answer = async <A, E extends { readonly message: string }>(effect: Effect.Effect<A, E, Owner | Projections | Dispatcher>): Promise<readonly [number, unknown]> => {
    // Its outcome as a value: a refusal is an answer, not a fiber failing (logged at DEBUG by
    // Effect with its message, a secret the operator mistyped included).
    const fiber = fork(Effect.exit(effect))
    inflight.add(fiber)
    const exit = Exit.flatten(await Effect.runPromise(Fiber.await(fiber)).finally(() => inflight.delete(fiber)))
    if (Exit.isSuccess(exit)) return [200, exit.value]
    const failure = Cause.failureOption(exit.cause)
    if (failure._tag === "Some") {
      const e = failure.value as { readonly message: string; readonly _tag?: string; readonly code?: string; readonly rejection?: { readonly code: string } }
      // The journal could not take it (a full disk): the operator is told which file, and that nothing was recorded.
      const where = e._tag === "JournalError" && options.journalFile !== undefined ? ` (the journal ${options.journalFile}: nothing was recorded)` : ""
      return [409, { code: e.rejection?.code ?? e.code ?? "refused", message: withoutSecrets(e.message) + where }]
    }
    if (Cause.isInterruptedOnly(exit.cause)) return [503, { code: "stopping", message: "svc serve is stopping" }]
    return [500, { code: "internal", message: "the runtime failed to handle this request" }]
  }
  return [
    {
      method: "POST",
      path: "/invite",
      handle: checked("/invite", (body) =>
        answer(
          Effect.flatMap(Owner, (o) =>
            o.invite({
              scope: body.scope ?? [],
              expiresInMs: body.expiresInMs ?? null,
              name: body.name ?? null,
              actor: options.actor
            })
          )
        )
      )
    },
    {
      method: "POST",
      path: "/rotate",
      handle: checked("/rotate", (body) =>
        answer(Effect.map(Effect.flatMap(Owner, (o) => o.rotate(body.worker, options.actor)), ({ pendingAlready, worker: w }) => ({ id: w.id, name: w.name, ...(pendingAlready ? { pendingAlready } : {}) })))
      )
    },
    {
      method: "POST",
      path: "/revoke",
      handle: checked("/revoke", (body) =>
        answer(
          Effect.map(Effect.flatMap(Owner, (o) => o.revokeWorkerOrInvite(body.worker, options.actor)), (r) =>
            r.kind === "worker" ? { kind: r.kind, id: r.worker.id, name: r.worker.name } : { kind: r.kind, id: r.invite.id, name: r.invite.name }
          )
        )
      )
    },
    {
      method: "GET",
      path: "/workers",
      // With the owner's time: the CLI judges the workers' times (a revocation a day ago) by it, not
      // by its own clock, which differs from the runtime's after a step back (SteadyClock.ts).
      handle: () =>
        answer(
          Effect.flatMap(Owner, (o) =>
            Effect.map(Effect.all({ workers: o.status, invites: o.pendingInvites, now: Clock.currentTimeMillis }), ({ now, ...rest }) => ({ ...rest, now: new Date(now).toISOString() }))
          )
        )
    },
    {
      method: "GET",
      path: "/state",
      // Megabytes with thousands of runs kept: written out in turns, as a checkpoint's snapshot is.
      handle: () =>
        answer(
          Effect.flatMap(Effect.flatMap(Projections, (p) => p.state), (s) =>
            Effect.map(jsonInTurns({ sequence: s.sequence, state: canonicalState(s), audit: Chunk.size(s.audit) }), (text) => new JsonText(text))
          )
        )
    },
    { method: "GET", path: "/links", handle: async () => [200, { ...(await options.links()), active: await options.activeLinks() }] as const },
    {
      // This machine's bags changed (`svc bag install|remove`): the owner looks at its pending runs
      // again (one it declined for its bag removed may run now: nothing else asked for a round),
      // and every link advertises what it holds now instead of within 4 s.
      method: "POST",
      path: "/bags/changed",
      handle: () => {
        options.bagsChanged?.()
        return answer(Effect.as(Effect.flatMap(Dispatcher, (d) => d.kick), {}))
      }
    },
    { method: "GET", path: "/bags/in-use", handle: async () => [200, { inUse: options.bagsInUse?.() ?? [] }] as const },
    {
      method: "POST",
      path: "/runs/submit",
      handle: checked("/runs/submit", (body) =>
        // No input is `{}`; an input of JSON null is null, given to the job as it was given.
        answer(Effect.flatMap(Dispatcher, (d) => d.submit({ address: body.address, input: body.input === undefined ? {} : body.input, prefer: body.prefer ?? [], actor: options.actor, ...(body.key === undefined ? {} : { key: body.key }) })))
      )
    },
    { method: "GET", path: "/runs", handle: () => answer(Effect.flatMap(Dispatcher, (d) => d.list())) },
    {
      method: "POST",
      path: "/runs/list",
      handle: checked("/runs/list", (body) => answer(Effect.flatMap(Dispatcher, (d) => d.list({ states: body.states ?? [], limit: body.limit ?? 0 }))))
    },
    { method: "POST", path: "/runs/show", handle: checked("/runs/show", (body) => answer(Effect.flatMap(Dispatcher, (d) => d.show(body.run)))) },
    { method: "POST", path: "/runs/stop", handle: checked("/runs/stop", (body) => answer(Effect.flatMap(Dispatcher, (d) => d.stop(body.run, options.actor)))) },
    {
      method: "POST",
      path: "/runs/wait",
      handle: checked("/runs/wait", (body) =>
        answer(Effect.flatMap(Dispatcher, (d) => d.wait(body.run, body.ms !== undefined && Number.isFinite(body.ms) ? Math.min(Math.max(body.ms, 0), 60_000) : 25_000, body.seen)))
      )
    },
    {
      method: "POST",
      path: "/release",
      handle: checked("/release", (body) =>
        answer(
          Effect.flatMap(Owner, (o) =>
            Effect.flatMap(o.find(body.worker), (w) =>
              Effect.map(Effect.flatMap(Dispatcher, (d) => d.release(w.id, options.actor, body.force === true)), (freed) => ({ id: w.id, name: w.name, freed }))
            )
          )
        )
      )
    }
  ]
}
