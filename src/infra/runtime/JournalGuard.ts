/**
 * An owner's journal that went back (docs/operations.md, "Restoring a backup"): a start reads
 * the journal's mark (domain/journal/JournalMark.ts) and refuses a journal older than the one
 * its owner wrote, or another one, saying what would come back; started with `--restored`, it
 * goes on from that journal and first revokes again the workers and invites the mark says were
 * closed. While it runs, it keeps the mark (every 2 s when something it guards changed, at most
 * every 10 s otherwise, and at a clean stop).
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Schedule from "effect/Schedule"
import { Journal } from "../../app/journal/Journal.js"
import { Projections } from "../../app/journal/Projections.js"
import { Owner } from "../../app/workers/Owner.js"
import { markOf, sameGuard, toReclose, wentBack, type Anchor, type JournalMark, type WentBack } from "../../domain/journal/JournalMark.js"
import { markPath, readMark, writeMark, type WrittenMark } from "../journal/JournalMarkFile.js"

/** What the owner says the actor of a revocation made again is. */
export const RESTORED_ACTOR = "svc serve --restored (closed before the journal was restored)"

const WRITE_EVERY_MS = 10_000

const wentBackText = (back: WentBack, mark: WrittenMark, sequence: number, store: string, home: string, reclose: { readonly workers: number; readonly invites: number }): string => {
  const what =
    back.kind === "shorter" && sequence === 0
      ? `the journal ${store} is empty, where this home's owner had written ${mark.sequence} ${mark.sequence === 1 ? "event" : "events"} (its mark ${markPath(home)}, of ${mark.writtenAt}): it was removed, or a new one put in its place`
      : back.kind === "shorter"
      ? `the journal ${store} ends at sequence ${sequence}, ${back.missing} ${back.missing === 1 ? "event" : "events"} before the sequence ${mark.sequence} this home's owner had written (its mark ${markPath(home)}, of ${mark.writtenAt}): an older copy was put in its place (a backup restored?), or another, shorter journal`
      : `the journal ${store} is not the one this home's owner wrote (its event at sequence ${mark.sequence} is ${back.at === null ? "none" : `${back.at.type} of ${back.at.stream}`}, not ${mark.anchor?.type} of ${mark.anchor?.stream}, says its mark ${markPath(home)} of ${mark.writtenAt}): another journal was put in its place`
  const closed = [`${reclose.workers} ${reclose.workers === 1 ? "worker" : "workers"}`, `${reclose.invites} ${reclose.invites === 1 ? "invite" : "invites"}`].join(" and ")
  return (
    `${what}. What was recorded after it is not in it: workers revoked and credentials replaced since would work again, invites spent since could be redeemed again, and runs since are unknown to it. ` +
    `To go on from this journal, start with svc serve --restored: it first revokes again the ${closed} its mark says were closed since (docs/operations.md, "Restoring a backup")`
  )
}

/** Checks the journal against its mark at start (failing with why when it went back), then keeps the mark while the runtime runs. */
export const guardJournal = (
  home: string,
  store: string,
  runtime: Runtime.Runtime<Owner | Projections | Journal>,
  options: { readonly restored: boolean; readonly taken: () => boolean }
) =>
  Effect.gen(function* () {
    const projections = Context.get(runtime.context, Projections)
    const journal = Context.get(runtime.context, Journal)
    const owner = Context.get(runtime.context, Owner)
    const anchorAt = (sequence: number): Effect.Effect<Anchor | null> =>
      sequence === 0
        ? Effect.succeed(null)
        : journal.read(sequence - 1, 1).pipe(
            Effect.map((es) => (es[0] !== undefined && es[0].sequence === sequence ? { stream: es[0].stream, streamVersion: es[0].streamVersion, type: es[0].type } : null)),
            Effect.orElseSucceed(() => null)
          )
    const markNow = Effect.gen(function* () {
      const s = projections.current()
      return markOf(s.sequence, yield* anchorAt(s.sequence), s.registry)
    })
    const unreadable: Array<string> = []
    const mark = yield* Effect.promise(() => readMark(home, (why) => unreadable.push(why)))
    for (const why of unreadable) yield* Effect.logWarning(`the journal's mark cannot be read (${why}): this start cannot tell whether the journal went back; it writes a new one`)
    const state = projections.current()
    const back = mark === undefined ? undefined : wentBack(mark, state.sequence, yield* anchorAt(mark.sequence))
    if (back !== undefined && mark !== undefined) {
      const reclose = toReclose(mark, state.registry)
      if (!options.restored) return yield* Effect.fail(wentBackText(back, mark, state.sequence, store, home, { workers: reclose.workers.length, invites: reclose.invites.length }))
      yield* Effect.logWarning(`svc serve --restored: going on from a journal that went back (${back.kind === "shorter" ? `${back.missing} events shorter than` : "another than"} the one of the mark of ${mark.writtenAt})`)
      for (const w of reclose.workers) {
        const done = yield* Effect.either(owner.revoke(w.id, RESTORED_ACTOR))
        yield* done._tag === "Right"
          ? Effect.logWarning(`worker ${done.right.name} (${w.id}) revoked again: ${w.why === "revoked" ? "it was revoked" : "its credential was replaced"} after the copy of the journal was made; invite it again`)
          : Effect.logError(`worker ${w.id} could not be revoked again: ${done.left.message}; revoke it with svc workers revoke ${w.id}`)
      }
      for (const id of reclose.invites) {
        const done = yield* Effect.either(owner.revokeWorkerOrInvite(id, RESTORED_ACTOR))
        yield* done._tag === "Right"
          ? Effect.logWarning(`invite ${id} revoked again: it was spent after the copy of the journal was made, and its token would have worked again`)
          : Effect.logError(`invite ${id} could not be revoked again: ${done.left.message}; revoke it with svc workers revoke ${id}`)
      }
      if (reclose.workers.length + reclose.invites.length === 0) yield* Effect.logInfo("nothing the mark guards was closed after the copy of the journal was made")
    } else if (options.restored) {
      yield* Effect.logInfo(`svc serve --restored: the journal did not go back${mark === undefined ? " (no mark to compare it with)" : ""}; nothing to close again`)
    }
    // Kept from here on: a mark at hand, written again when what it guards changed (every 2 s at
    // most) or the journal moved on (every 10 s at most), and at a clean stop.
    let last: { mark: JournalMark; at: number } | undefined
    const write = (force: boolean) =>
      Effect.gen(function* () {
        if (options.taken()) return
        // Nothing appended since: nothing to write (and the journal not read for its anchor).
        if (!force && last !== undefined && projections.current().sequence === last.mark.sequence) return
        const next = yield* markNow
        const now = yield* Clock.currentTimeMillis
        if (!force && last !== undefined && (next.sequence === last.mark.sequence || (sameGuard(next, last.mark) && now - last.at < WRITE_EVERY_MS))) return
        yield* Effect.tryPromise(() => writeMark(home, next, new Date(now)))
        last = { mark: next, at: now }
      }).pipe(Effect.catchAll((e) => Effect.logWarning(`the journal's mark could not be written: ${e.error instanceof Error ? e.error.message : String(e.error)}`)))
    yield* write(true)
    yield* Effect.forkScoped(Effect.repeat(write(false), Schedule.spaced("2 seconds")))
    yield* Effect.addFinalizer(() => write(true))
  })
