/**
 * The journal's mark kept by a running owner (src/infra/runtime/JournalGuard.ts), with Effect's
 * TestClock: written at start, again within 2 s of a change to what it guards (a revocation, an
 * invite spent), and at most every 10 s for any other commit; a start with a mark ahead of its
 * journal is refused, naming what --restored would revoke again.
 */
import { describe, expect, it } from "@effect/vitest"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import type { Journal } from "../../../src/app/journal/Journal.js"
import type { Projections } from "../../../src/app/journal/Projections.js"
import { Owner } from "../../../src/app/workers/Owner.js"
import { guardJournal } from "../../../src/infra/runtime/JournalGuard.js"
import { memoryOwner } from "../../support/runs.js"
import { tempDir } from "../../support/svc.js"

const TestOwner = memoryOwner

/** The mark as written now (the writer's file I/O is real: waited for in real time, briefly). */
const markIn = (home: string) =>
  Effect.promise(async () => {
    await new Promise((resolve) => setTimeout(resolve, 50))
    return JSON.parse(readFileSync(join(home, "journal.mark"), "utf8")) as { sequence: number; spent: Array<string> }
  })

describe("the journal's mark, kept by a running owner", () => {
  it.scoped("is written at start, within 2 s of a change to what it guards, and at most every 10 s for any other commit", () =>
    Effect.gen(function* () {
      const home = tempDir("svc-guard-")
      const runtime = yield* Effect.runtime<Owner | Projections | Journal>()
      yield* guardJournal(home, "svc.sqlite", runtime, { restored: false, taken: () => false })
      expect((yield* markIn(home)).sequence).toBe(0)
      const owner = yield* Owner
      // An invite: a commit, nothing guarded changed: not written before 10 s have passed.
      const first = yield* owner.invite({ scope: [], expiresInMs: null, name: "lab", actor: "operator" })
      yield* TestClock.adjust("2 seconds")
      expect((yield* markIn(home)).sequence).toBe(0)
      yield* TestClock.adjust("8 seconds")
      expect((yield* markIn(home)).sequence).toBe(1)
      // Revoked unused: its token spent, guarded: written at the next beat, within 2 s.
      yield* owner.revokeWorkerOrInvite(first.inviteId, "operator")
      yield* TestClock.adjust("2 seconds")
      expect(yield* markIn(home)).toMatchObject({ sequence: 2, spent: [first.inviteId] })
    }).pipe(Effect.provide(TestOwner))
  )

  it.scoped("ahead of the journal (a copy put in its place) stops the start, saying what --restored would revoke again", () =>
    Effect.gen(function* () {
      const home = tempDir("svc-guard-back-")
      writeFileSync(
        join(home, "journal.mark"),
        JSON.stringify({ sequence: 5, anchor: { stream: "invite-x", streamVersion: 2, type: "InviteRevoked" }, revoked: ["w1"], credentials: {}, spent: ["i1"], writtenAt: "2026-11-26T10:00:00.000Z" })
      )
      const runtime = yield* Effect.runtime<Owner | Projections | Journal>()
      const refused = yield* Effect.flip(guardJournal(home, "/h/svc.sqlite", runtime, { restored: false, taken: () => false }))
      expect(refused).toMatch(/^the journal \/h\/svc\.sqlite is empty, where this home's owner had written 5 events \(its mark \S+journal\.mark, of 2026-11-26T10:00:00\.000Z\): it was removed, or a new one put in its place\. /)
      // Neither w1 nor i1 is in this journal: nothing to revoke again.
      expect(refused).toContain("it first revokes again the 0 workers and 0 invites its mark says were closed since")
    }).pipe(Effect.provide(TestOwner))
  )
})
