/**
 * What the admin socket answers (docs/protocol.md, "The admin API"): each route calls one
 * owner service and answers its result, or its refusal as `{code, message}` (409), or 500 for
 * a bug. The operator is the actor of what they do.
 */
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Runtime from "effect/Runtime"
import { jsonInTurns } from "../../app/journal/JsonInTurns.js"
import { Projections } from "../../app/journal/Projections.js"
import { Dispatcher } from "../../app/runs/Dispatcher.js"
import { Owner } from "../../app/workers/Owner.js"
import { canonicalState } from "../../domain/journal/OwnerState.js"
import { JsonText, type AdminRoute } from "../http/AdminApi.js"

const field = (body: unknown, key: string): unknown => (typeof body === "object" && body !== null ? (body as Record<string, unknown>)[key] : undefined)

const inflight = new Set<Fiber.RuntimeFiber<unknown, unknown>>()

/** Interrupts the admin calls still running (a `runs wait`): the runtime is stopping. */
export const interruptAdminCalls = () => Effect.runPromise(Fiber.interruptAll(inflight))

export const adminRoutes = (
  runtime: Runtime.Runtime<Owner | Projections | Dispatcher>,
  options: { readonly actor: string; readonly links: () => Promise<ReadonlyArray<unknown>> }
): ReadonlyArray<AdminRoute> => {
  const fork = Runtime.runFork(runtime)
  const answer = async <A, E extends { readonly message: string }>(effect: Effect.Effect<A, E, Owner | Projections | Dispatcher>): Promise<readonly [number, unknown]> => {
    const fiber = fork(effect)
    inflight.add(fiber)
    const exit = await Effect.runPromise(Fiber.await(fiber)).finally(() => inflight.delete(fiber))
    if (Exit.isSuccess(exit)) return [200, exit.value]
    const failure = Cause.failureOption(exit.cause)
    if (failure._tag === "Some") {
      const e = failure.value as { readonly message: string; readonly _tag?: string; readonly code?: string; readonly rejection?: { readonly code: string } }
      return [409, { code: e.rejection?.code ?? e.code ?? "refused", message: e.message }]
    }
    if (Cause.isInterruptedOnly(exit.cause)) return [503, { code: "stopping", message: "svc serve is stopping" }]
    return [500, { code: "internal", message: "the runtime failed to handle this request" }]
  }
  const worker = (body: unknown) => String(field(body, "worker") ?? "")
  const run = (body: unknown) => String(field(body, "run") ?? "")
  return [
    {
      method: "POST",
      path: "/invite",
      handle: (body) => {
        const scope = field(body, "scope")
        const expiresInMs = field(body, "expiresInMs")
        const name = field(body, "name")
        if (expiresInMs != null && (typeof expiresInMs !== "number" || !Number.isFinite(expiresInMs))) {
          return Promise.resolve([400, { code: "bad-request", message: `expiresInMs takes a number of milliseconds, not ${JSON.stringify(expiresInMs)}` }] as const)
        }
        return answer(
          Effect.flatMap(Owner, (o) =>
            o.invite({
              scope: Array.isArray(scope) ? scope.map(String) : [],
              expiresInMs: typeof expiresInMs === "number" ? expiresInMs : null,
              name: typeof name === "string" ? name : null,
              actor: options.actor
            })
          )
        )
      }
    },
    {
      method: "POST",
      path: "/rotate",
      handle: (body) => answer(Effect.map(Effect.flatMap(Owner, (o) => o.rotate(worker(body), options.actor)), (w) => ({ id: w.id, name: w.name })))
    },
    {
      method: "POST",
      path: "/revoke",
      handle: (body) =>
        answer(
          Effect.map(Effect.flatMap(Owner, (o) => o.revokeWorkerOrInvite(worker(body), options.actor)), (r) =>
            r.kind === "worker" ? { kind: r.kind, id: r.worker.id, name: r.worker.name } : { kind: r.kind, id: r.invite.id, name: r.invite.name }
          )
        )
    },
    {
      method: "GET",
      path: "/workers",
      handle: () => answer(Effect.flatMap(Owner, (o) => Effect.zipWith(o.status, o.pendingInvites, (workers, invites) => ({ workers, invites }))))
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
    { method: "GET", path: "/links", handle: async () => [200, { links: await options.links() }] as const },
    {
      method: "POST",
      path: "/runs/submit",
      handle: (body) => {
        const prefer = field(body, "prefer")
        return answer(
          Effect.flatMap(Dispatcher, (d) =>
            d.submit({ address: String(field(body, "address") ?? ""), input: field(body, "input") ?? {}, prefer: Array.isArray(prefer) ? prefer.map(String) : [], actor: options.actor })
          )
        )
      }
    },
    { method: "GET", path: "/runs", handle: () => answer(Effect.flatMap(Dispatcher, (d) => d.list())) },
    {
      method: "POST",
      path: "/runs/list",
      handle: (body) => {
        const states = field(body, "states")
        const limit = field(body, "limit")
        return answer(Effect.flatMap(Dispatcher, (d) => d.list({ states: Array.isArray(states) ? states.map(String) : [], limit: limit === undefined ? 0 : Number(limit) })))
      }
    },
    { method: "POST", path: "/runs/show", handle: (body) => answer(Effect.flatMap(Dispatcher, (d) => d.show(run(body)))) },
    { method: "POST", path: "/runs/stop", handle: (body) => answer(Effect.flatMap(Dispatcher, (d) => d.stop(run(body), options.actor))) },
    {
      method: "POST",
      path: "/runs/wait",
      handle: (body) => {
        const ms = Number(field(body, "ms"))
        const seen = field(body, "seen")
        return answer(
          Effect.flatMap(Dispatcher, (d) => d.wait(run(body), Number.isFinite(ms) ? Math.min(Math.max(ms, 0), 60_000) : 25_000, typeof seen === "string" ? seen : undefined))
        )
      }
    },
    {
      method: "POST",
      path: "/release",
      handle: (body) =>
        answer(
          Effect.flatMap(Owner, (o) =>
            Effect.flatMap(o.find(worker(body)), (w) =>
              Effect.map(Effect.flatMap(Dispatcher, (d) => d.release(w.id, options.actor, field(body, "force") === true)), (freed) => ({ id: w.id, name: w.name, freed }))
            )
          )
        )
    }
  ]
}
