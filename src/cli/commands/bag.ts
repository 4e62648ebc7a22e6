/** `svc bag check|install|list|show|doctor|remove`: bags on this machine. */
import * as nodePath from "node:path"
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { type CheckReport } from "../../app/bags/BagCheck.js"
import type { BagDirectoryError } from "../../app/bags/BagDirectory.js"
import { BagInUse, checkBagWhole, installBag, removeBag, type InUseGuard, type TreeOutcome } from "../../app/bags/BagInstall.js"
import { dependentsOf, doctorAll, doctorBag, showBag, type DoctorReport, type Finding } from "../../app/bags/BagReport.js"
import { BagStore, type BagStoreError } from "../../app/bags/BagStore.js"
import { shortDigest } from "../../domain/bags/Digest.js"
import { adminCall, RuntimeNotRunning } from "../../infra/http/AdminApi.js"
import { SvcHome } from "../../infra/SvcHome.js"
import { exitQuietly, refused, usage } from "../CliFailure.js"
import { json, printJson, printLines, table } from "../output.js"


const directoryFailure = (e: BagDirectoryError) =>
  e.reason === "NotFound" || e.reason === "NotADirectory" ? usage(e.message) : refused(e.message)
const storeFailure = (e: BagStoreError) => refused(e.message, e.reason === "NotInstalled" ? "not-found" : undefined)

const problemLine = (p: CheckReport["problems"][number], file = "bag.yaml") =>
  `${file}:${p.line}:${p.column}: ${p.path}: ${p.severity === "warning" ? "warning: " : ""}${p.message}`

const check = Command.make(
  "check",
  { dir: Args.directory({ name: "DIR", exists: "either" }).pipe(Args.withDescription("the bag's directory, holding bag.yaml (default: the current one)"), Args.withDefault(".")), json },
  ({ dir, json }) =>
    Effect.gen(function* () {
      const { report } = yield* checkBagWhole(dir)
      if (json) {
        yield* printJson({
          valid: report.valid,
          problems: report.problems.map((p) => ({ path: p.path, line: p.line, column: p.column, message: p.message, severity: p.severity }))
        })
      } else {
        yield* printLines(report.problems.map((p) => problemLine(p)))
        if (report.valid) yield* Console.log(`${dir}: bag.yaml is valid`)
      }
      if (!report.valid) return yield* exitQuietly(1)
    }).pipe(
      Effect.catchTag("BagDirectoryError", (e) => {
        const failure = directoryFailure(e)
        if (failure.exitCode !== 1) return Effect.fail(failure)
        // Not a usage error (the directory is there but is no bag: no bag.yaml, too large,
        // unreadable): one problem at the root, as the contract prints problems: with --json the
        // document, beside the sentence; as text its line (it was an `svc:` sentence a script
        // reading `bag.yaml:LINE:COL: key.path: message` lines missed).
        const problem = { path: "(root)", line: 1, column: 1, message: e.message, severity: "error" as const }
        return json ? Effect.zipRight(printJson({ valid: false, problems: [problem] }), Effect.fail(failure)) : Effect.zipRight(printLines([problemLine(problem)]), exitQuietly(1))
      })
    )
).pipe(Command.withDescription("Validate a bag directory without installing it (exit 0 valid, 1 invalid)"))

/** The children composed from a `path`, installed first, then the bag: one line each, and its jobs. */
const installLines = (o: TreeOutcome): Array<string> => [
  ...o.children.flatMap(installLines),
  `${o.status} ${o.bag.name} ${o.bag.digest}`,
  ...(o.bag.jobs.length > 0 ? [`jobs: ${o.bag.jobs.map((j) => j.address ?? `${j.name} (unversioned)`).join(", ")}`] : [])
]
const notesOf = (o: TreeOutcome): Array<string> => [...o.children.flatMap(notesOf), ...o.notes]
type InstallJson = { status: string; name: string; digest: string; jobs: TreeOutcome["bag"]["jobs"]; children: Array<InstallJson>; notes: ReadonlyArray<string> }
const installJson = (o: TreeOutcome): InstallJson => ({
  status: o.status,
  name: o.bag.name,
  digest: o.bag.digest,
  jobs: o.bag.jobs,
  children: o.children.map(installJson),
  notes: o.notes
})

/**
 * Tells the runtime running for this home, if one does, that its bags changed (`POST
 * /bags/changed`): an owner looks at its pending runs again (one it declined when the bag it pins
 * was removed runs once it is back: nothing else asked for a round, fleet audit), and its links
 * advertise at once. Best effort, 2 s at most: with none running, or one that does not answer, the
 * runtime finds out by itself (its links' next advertisement within 4 s; the owner's next round).
 */
const tellRuntime = Effect.flatMap(SvcHome, (home) =>
  Effect.promise(() => adminCall(home.path, "POST", "/bags/changed", {}, AbortSignal.timeout(2_000)).then(
    () => undefined,
    () => undefined
  ))
)

/**
 * Asks the runtime running for this home, if one does, whether jobs run from `bag`'s installed
 * copy now, and refuses to change it while they do (BagInUse). None running: no job runs here. A
 * runtime that does not answer within 2 s (stopped, stuck) is not waited for: the command says
 * that the check was not made, and goes on.
 */
const inUseIn =
  (home: string): InUseGuard =>
  (bag, change) =>
    Effect.flatMap(
      Effect.promise(() =>
        adminCall(home, "GET", "/bags/in-use", undefined, AbortSignal.timeout(2_000)).then(
          (r) => (r.status === 200 ? ((r.body as { readonly inUse?: ReadonlyArray<{ readonly dir: string; readonly attempts: number }> }).inUse ?? []) : []),
          (e: unknown) => (e instanceof RuntimeNotRunning ? [] : undefined)
        )
      ),
      (used) => {
        if (used === undefined) return Console.error(`note: svc serve for ${home} did not say within 2 s whether jobs run from ${bag.name} now (stopped or stuck?): not checked`)
        const attempts = used.filter((u) => u.dir === bag.path).reduce((n, u) => n + u.attempts, 0)
        if (attempts === 0) return Effect.void
        const doing =
          change === "replace"
            ? "replacing it now would change their code as they run (what they load later would come from the new copy, and their results be recorded under the digest they started with)"
            : "removing it now would fail them"
        return Effect.fail(
          new BagInUse({
            message: `${attempts} ${attempts === 1 ? "job runs" : "jobs run"} on this machine from the installed copy of ${bag.name} (${shortDigest(bag.digest)}): ${doing}; wait until ${attempts === 1 ? "it ends" : "they end"} (svc workers status, svc runs list), then run this again`
          })
        )
      }
    )

const install = Command.make(
  "install",
  { dir: Args.directory({ name: "DIR", exists: "either" }).pipe(Args.withDescription("the bag's directory, holding bag.yaml")), json },
  ({ dir, json }) =>
    Effect.flatMap(SvcHome, (home) => installBag(dir, inUseIn(home.path))).pipe(
      Effect.tap(() => tellRuntime),
      Effect.flatMap((outcome) =>
        json
          ? printJson(installJson(outcome))
          : Effect.zipRight(printLines(installLines(outcome)), Effect.forEach(notesOf(outcome), (note) => Console.error(`note: ${note}`), { discard: true }))
      ),
      Effect.catchTags({
        BagDirectoryError: (e) => Effect.fail(directoryFailure(e)),
        BagInvalid: (e) => {
          // A child refused: its problems are in its bag.yaml, not the one asked for.
          const child = e.composedBy !== undefined && e.composedBy.length > 0
          return Effect.zipRight(
            json
              ? printJson({ valid: false, problems: e.problems, ...(child ? { bag: e.dir, composedBy: e.composedBy } : {}) })
              : printLines(e.problems.map((p) => problemLine(p, child ? nodePath.join(e.dir, "bag.yaml") : "bag.yaml"))),
            Effect.fail(refused(e.message))
          )
        },
        AddressTaken: (e) => Effect.fail(refused(e.message)),
        BagInUse: (e) => Effect.fail(refused(e.message)),
        CompositionProblem: (e) => Effect.fail(refused(e.message)),
        BagStoreError: (e) => Effect.fail(storeFailure(e))
      })
    )
).pipe(Command.withDescription("Validate a bag and install a copy into $SVC_HOME, with its content digest"))

const list = Command.make("list", { json }, ({ json }) =>
  Effect.gen(function* () {
    const bags = yield* (yield* BagStore).list
    if (json) return yield* printJson({ bags: bags.map(({ path: _path, ...b }) => b) })
    if (bags.length === 0) return yield* Console.log("no bags installed; install one with: svc bag install DIR")
    yield* printLines(table(["NAME", "DIGEST", "JOBS", "DESCRIPTION"], bags.map((b) => [b.name, shortDigest(b.digest), String(b.jobs.length), b.description])))
  }).pipe(Effect.catchTag("BagStoreError", (e) => Effect.fail(storeFailure(e))))
).pipe(Command.withDescription("List installed bags"))

/** A job's host requirements in words: `labels gpu=true; programs ffmpeg`, or `-`. */
const requiresText = (j: { readonly requiredLabels: ReadonlyArray<string>; readonly requiredBins: ReadonlyArray<string> }) =>
  [j.requiredLabels.length > 0 ? `labels ${j.requiredLabels.join(", ")}` : "", j.requiredBins.length > 0 ? `programs ${j.requiredBins.join(", ")}` : ""].filter((x) => x !== "").join("; ") || "-"

const findingLines = (findings: ReadonlyArray<Finding>) => findings.map((f) => `${f.severity}: ${f.message}`)

const show = Command.make("show", { name: Args.text({ name: "NAME" }).pipe(Args.withDescription("an installed bag's name (svc bag list names them)")), json }, ({ json, name }) =>
  Effect.gen(function* () {
    const summary = yield* showBag(name)
    if (json) return yield* printJson(summary)
    yield* printLines([
      `${summary.name}${summary.version === undefined ? "" : ` ${summary.version}`}: ${summary.description}`,
      `digest: ${summary.digest}`,
      `installed: ${summary.installedAt} from ${summary.source}`,
      ...(summary.jobs.length === 0
        ? ["jobs: none"]
        : ["jobs:", ...table(["  JOB", "ADDRESS", "RUNS", "REQUIRES", "REMOTE"], summary.jobs.map((j) => [`  ${j.name}`, j.address ?? "(unversioned)", j.runs, requiresText(j), j.explanation]))]),
      ...(summary.services.length > 0 ? [`services: ${summary.services.join(", ")}`] : []),
      ...(summary.schedules.length > 0 ? [`schedules: ${summary.schedules.join(", ")}`] : []),
      ...(summary.scripts.length > 0 ? [`scripts: ${summary.scripts.join(", ")}`] : []),
      ...findingLines(summary.findings)
    ])
  }).pipe(Effect.catchTag("BagStoreError", (e) => Effect.fail(storeFailure(e))))
).pipe(Command.withDescription("Show an installed bag: jobs with BAG:JOB@VERSION, digest, remote eligibility"))

const doctor = Command.make(
  "doctor",
  { name: Args.text({ name: "NAME" }).pipe(Args.withDescription("an installed bag's name; none: every installed bag"), Args.optional), json },
  ({ json, name }) =>
    Effect.gen(function* () {
      const reports: ReadonlyArray<DoctorReport> = name._tag === "Some" ? [yield* doctorBag(name.value)] : yield* doctorAll
      if (json) yield* printJson({ bags: reports })
      else {
        for (const r of reports) {
          yield* printLines(r.findings.length === 0 ? [`${r.name}: ok`] : [`${r.name}:`, ...findingLines(r.findings).map((l) => `  ${l}`)])
        }
        if (reports.length === 0) yield* Console.log("no bags installed")
      }
      if (reports.some((r) => r.findings.some((f) => f.severity === "error"))) return yield* exitQuietly(1)
    }).pipe(Effect.catchTag("BagStoreError", (e) => Effect.fail(storeFailure(e))))
).pipe(Command.withDescription("Check what installed bags need on this machine (programs on PATH, required bags)"))

const remove = Command.make("remove", { name: Args.text({ name: "NAME" }).pipe(Args.withDescription("an installed bag's name")), json }, ({ json, name }) =>
  Effect.flatMap(SvcHome, (home) => removeBag(name, inUseIn(home.path))).pipe(
    Effect.tap(() => tellRuntime),
    Effect.flatMap((bag) =>
      Effect.gen(function* () {
        // What its removal leaves broken, said (best effort: the bag is removed either way).
        const dependents = yield* dependentsOf(bag.name).pipe(Effect.orElseSucceed(() => []))
        if (json) return yield* printJson({ removed: bag.name, digest: bag.digest, dependents })
        yield* Console.log(`removed ${bag.name}`)
        for (const d of dependents) {
          const what = d.relation === "extends" ? `remove it too (svc bag remove ${d.bag}), or install ${bag.name} again` : `svc bag doctor ${d.bag} reports it (install ${bag.name} again, or remove ${d.bag})`
          yield* Console.error(`note: ${d.bag} ${d.relation} ${bag.name}, which is no longer installed: ${what}`)
        }
      })
    ),
    Effect.catchTags({ BagStoreError: (e) => Effect.fail(storeFailure(e)), BagInUse: (e) => Effect.fail(refused(e.message)) })
  )
).pipe(Command.withDescription("Remove an installed bag"))

export const bagCommand = Command.make("bag").pipe(
  Command.withDescription("Bags: check, install, list, show, doctor, remove"),
  Command.withSubcommands([check, install, list, show, doctor, remove])
)
