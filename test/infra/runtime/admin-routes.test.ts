/** What the admin socket answers when the journal could not take a command (a full disk). */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { describe, expect, it } from "vitest"
import { JournalError } from "../../../src/app/journal/Journal.js"
import { Projections } from "../../../src/app/journal/Projections.js"
import { Dispatcher } from "../../../src/app/runs/Dispatcher.js"
import { Owner } from "../../../src/app/workers/Owner.js"
import { adminRoutes } from "../../../src/infra/runtime/AdminRoutes.js"

describe("the admin routes", () => {
  it("a command the journal could not take is refused naming the journal's file, and that nothing was recorded", async () => {
    const full = new JournalError({ reason: "Io", message: "appending to the journal: database or disk is full" })
    // Only what /invite calls; the rest is never reached here.
    const services = Layer.mergeAll(
      Layer.succeed(Owner, { invite: () => Effect.fail(full) } as unknown as Owner["Type"]),
      Layer.succeed(Projections, {} as Projections["Type"]),
      Layer.succeed(Dispatcher, {} as Dispatcher["Type"])
    )
    const runtime = await Effect.runPromise(Effect.scoped(Layer.toRuntime(services)))
    const routes = adminRoutes(runtime, { actor: "operator test", links: async () => ({ links: [], unreadable: [] }), activeLinks: async () => [], journalFile: "/home/op/.svc/svc.sqlite" })
    const invite = routes.find((r) => r.path === "/invite")!
    expect(await invite.handle({})).toEqual([
      409,
      { code: "refused", message: "appending to the journal: database or disk is full (the journal /home/op/.svc/svc.sqlite: nothing was recorded)" }
    ])
  })

  it("bags changed (svc bag install|remove): asks the owner for a round and its links to advertise now", async () => {
    let kicks = 0
    let told = 0
    const services = Layer.mergeAll(
      Layer.succeed(Owner, {} as Owner["Type"]),
      Layer.succeed(Projections, {} as Projections["Type"]),
      Layer.succeed(Dispatcher, { kick: Effect.sync(() => void kicks++) } as unknown as Dispatcher["Type"])
    )
    const runtime = await Effect.runPromise(Effect.scoped(Layer.toRuntime(services)))
    const routes = adminRoutes(runtime, { actor: "operator test", links: async () => ({ links: [], unreadable: [] }), activeLinks: async () => [], bagsChanged: () => void told++ })
    const changed = routes.find((r) => r.path === "/bags/changed")!
    expect(changed.method).toBe("POST")
    expect(await changed.handle({})).toEqual([200, {}])
    expect([kicks, told]).toEqual([1, 1])
  })
})
