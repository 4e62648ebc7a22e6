/**
 * `svc journal replay`: rebuild every projection from the journal and compare it with the latest
 * checkpoint and the running owner; `--audit` also re-runs every recorded placement decision.
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { Journal } from "../../../app/journal/Journal.js"
import { auditPlacements, replay, type LiveOwnerState } from "../../../app/journal/Replay.js"
import { parseRetainedRuns, RETAINED_RUNS_VARIABLE } from "../../../app/runs/Retention.js"
import { initialStateRetaining } from "../../../domain/journal/OwnerState.js"
import type { CanonicalState } from "../../../domain/journal/Snapshot.js"
import { settingFor } from "../../../infra/SvcConfig.js"
import { adminCall } from "../../../infra/http/AdminApi.js"
import { SvcHome } from "../../../infra/SvcHome.js"
import { ANSWER_WITHIN, SLOW_NOTICE, slowNotice } from "../../admin.js"
import { exitQuietly, refused } from "../../CliFailure.js"
import { json, printJson, printLines } from "../../output.js"
import { journalFailure, ReadLayer } from "./readOnlyStore.js"

const audit = Options.boolean("audit").pipe(Options.withDescription("also re-run every recorded placement decision from its recorded inputs and report each as reproduced or diverged"))

/** Where replay took the number of settled runs it kept: svc serve reads the environment, then svc.yaml. */
export type RetainedFrom = "owner" | "environment" | "svc.yaml" | "default"

const runsText = (n: number) => `${n} settled run${n === 1 ? "" : "s"}`

/**
 * Why a checkpoint folded keeping another number of settled runs is not compared, and what to do.
 * A number set only in svc serve's environment is not this command's: it was said to have
 * "changed" when the owner had simply been started with it.
 */
export const retentionNotCompared = (written: number, kept: number, from: RetainedFrom): string => {
  const head = `written while the owner kept ${runsText(written)} per generation, this replay kept ${kept}`
  if (from === "owner") return `${head}, as the running owner does: ${RETAINED_RUNS_VARIABLE} changed since; it writes a current one within 5 minutes`
  const source = from === "environment" ? "from this command's environment" : from === "svc.yaml" ? "from svc.yaml" : "the default: set in neither this command's environment nor svc.yaml"
  return `${head} (${source}): if the owner was started with ${RETAINED_RUNS_VARIABLE}=${written}, set it for this command too (${RETAINED_RUNS_VARIABLE}=${written} svc journal replay) or in svc.yaml; if the setting changed since, a running owner writes a current one within 5 minutes`
}

/** The first line of replay's report. */
export const replayedLine = (events: number, head: number, seconds: number, perSecond: number): string =>
  `replayed ${events} event${events === 1 ? "" : "s"} (to sequence ${head}) in ${seconds.toFixed(2)} s, ${perSecond} events/s`

/** The first line of `replay --audit`'s report. */
export const placementAuditLine = (decisions: number, seconds: number, reproduced: number, diverged: number): string =>
  `placement audit: ${decisions} decision${decisions === 1 ? "" : "s"} re-run through the current placement code in ${seconds.toFixed(2)} s: ${reproduced} reproduced, ${diverged} diverged`

/**
 * The owner's state to compare with the fold, at the journal's end (`head`): its first answer when
 * it has not moved since; else it is asked again, unless that first answer took the slow notice's
 * time or more. An owner that slow (saturated) has moved again by the time a second slow answer
 * comes, and the command would wait, and say so, twice for nothing: the reason is said instead.
 */
export const ownerAtEnd = (
  first: LiveOwnerState | string | undefined,
  took: Duration.Duration,
  head: number,
  askAgain: Effect.Effect<LiveOwnerState | string | undefined>
): Effect.Effect<LiveOwnerState | string | undefined> =>
  typeof first !== "object" || first.sequence === head
    ? Effect.succeed(first)
    : Duration.lessThan(took, SLOW_NOTICE)
      ? askAgain
      : Effect.succeed(
          `the owner answered in ${Math.round(Duration.toSeconds(took))} s at sequence ${first.sequence}, and the journal has moved past it since (to ${head}); an owner that slow is not asked twice`
        )

export const replayCommand = Command.make("replay", { json, audit }, ({ audit, json }) =>
  journalFailure(
    Effect.gen(function* () {
      const home = (yield* SvcHome).path
      // The running owner's projections, when one runs on this machine (admin API).
      // One that is there and does not answer (stopped with SIGSTOP) is said so, not waited for.
      const asked = Effect.tryPromise((signal) => adminCall(home, "GET", "/state", undefined, signal)).pipe(
        Effect.map((r) => (r.status === 200 ? (r.body as LiveOwnerState) : undefined))
      )
      const live = slowNotice(asked, home, `waiting up to ${Duration.toSeconds(ANSWER_WITHIN)} s in all, then replaying without comparing with it`).pipe(
        Effect.timeoutTo({
          duration: ANSWER_WITHIN,
          onSuccess: (state): LiveOwnerState | string | undefined => state,
          onTimeout: () => `svc serve for ${home} did not answer within ${Duration.toSeconds(ANSWER_WITHIN)} s (its process stopped, or stuck?)`
        }),
        Effect.orElseSucceed(() => undefined)
      )
      // Folded keeping as many settled runs as the owner does: the running one's, else this
      // command's environment's, else svc.yaml's (as svc serve reads it).
      const [took, running] = yield* Effect.timed(live)
      const liveRetain = typeof running === "object" ? (running.state as Partial<CanonicalState> | undefined)?.runs?.retain : undefined
      const setting =
        typeof liveRetain === "number" ? undefined : yield* Effect.tryPromise({ try: () => settingFor(home, RETAINED_RUNS_VARIABLE), catch: (e) => refused(e instanceof Error ? e.message : String(e)) })
      const retain = typeof liveRetain === "number" ? liveRetain : yield* Effect.mapError(parseRetainedRuns(setting?.value), refused)
      const retainedFrom: RetainedFrom = typeof liveRetain === "number" ? "owner" : setting!.from
      // Compared after the fold with the owner's state at the journal's end (ownerAtEnd; a large
      // state costs the owner its writing, so it is not asked again when it has not moved).
      const journal = yield* Journal
      const atEnd = Effect.flatMap(Effect.orElseSucceed(journal.head, () => -1), (head) => ownerAtEnd(running, took, head, live))
      const report = yield* replay({ state: atEnd }, initialStateRetaining(retain))
      const auditStarted = Date.now()
      const placements = audit ? yield* auditPlacements : undefined
      const auditSeconds = (Date.now() - auditStarted) / 1000
      if (json) yield* printJson(placements === undefined ? report : { ...report, placements: { ...placements, seconds: auditSeconds } })
      else {
        yield* printLines([
          replayedLine(report.events, report.head, report.seconds, report.eventsPerSecond),
          report.checkpoint === null
            ? "checkpoint: none written yet"
            : report.checkpoint.matches === null
              ? report.checkpoint.form === "retention"
                ? `checkpoint at sequence ${report.checkpoint.sequence}: not compared (${retentionNotCompared(report.checkpoint.retained ?? 0, report.retained, retainedFrom)})`
                : report.checkpoint.form === "later"
                  ? `checkpoint at sequence ${report.checkpoint.sequence}: not compared (written by a newer svc, whose projections have a later form)`
                  : `checkpoint at sequence ${report.checkpoint.sequence}: not compared (written by an earlier svc, whose projections had another form; a running owner writes a current one within 5 minutes)`
              : `checkpoint at sequence ${report.checkpoint.sequence}: ${report.checkpoint.matches ? "matches" : "DIVERGES"}`,
          report.owner.compared ? `running owner: ${report.owner.matches ? "matches" : "DIVERGES"}` : `running owner: not compared (${report.owner.reason})`,
          ...report.divergences.map((d) => `divergence (${d.against}, sequence ${d.sequence}): ${d.message}`)
        ])
        if (placements !== undefined) {
          yield* printLines([
            placementAuditLine(placements.decisions, auditSeconds, placements.reproduced, placements.diverged.length),
            ...placements.diverged.map((d) => `diverged (sequence ${d.sequence}, run ${d.runId}): ${d.differences.join("; ")}`)
          ])
        }
      }
      if (report.divergences.length > 0 || (placements !== undefined && placements.diverged.length > 0)) return yield* exitQuietly(1)
    }).pipe(Effect.provide(ReadLayer))
  )
).pipe(Command.withDescription("Rebuild every projection from the journal and report any divergence (exit 1 when one is found)"))
