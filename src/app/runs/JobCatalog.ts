/**
 * Resolving `BAG:JOB@VERSION` against the installed bags: what a run of it needs (the owner at
 * submission, a worker when it is handed an attempt), and its input and output checks against
 * the job's `input_schema` and `output_schema`. The same code on both sides, so owner and
 * worker agree on what the address means (and the digest pins it).
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type { RunJob } from "../../domain/journal/Events.js"
import type { FormatValidators } from "../../domain/manifest/Environment.js"
import { durationSeconds } from "../../domain/manifest/Formats.js"
import { explainEligibility, remoteEligibility } from "../../domain/manifest/RemoteEligibility.js"
import { depthProblem, jobAddressProblem } from "../../domain/runs/Values.js"
import { BagDirectory } from "../bags/BagDirectory.js"
import { checkSnapshot } from "../bags/BagCheck.js"
import { pinnedResolver } from "../bags/BagConstants.js"
import { BagStore } from "../bags/BagStore.js"
import { ManifestSource } from "../bags/ManifestSource.js"
import type { ExecutionSpec, Preflight, Validate } from "./Executor.js"

/**
 * Why a job cannot run here. `unreadable`: its bag could not be read (too many open files, an I/O
 * error), which says nothing of the bag: a worker fails that attempt rather than decline it (a
 * decline keeps the worker from the run for good).
 */
export class JobNotRunnable extends Data.TaggedError("JobNotRunnable")<{ readonly message: string; readonly unreadable?: boolean }> {}

export interface ResolvedJob {
  readonly job: RunJob
  readonly bagDir: string
  readonly runs: ExecutionSpec["runs"]
  readonly env: ReadonlyArray<string>
  readonly workingDirectory: string | undefined
  readonly secrets: ReadonlyArray<string>
  readonly preflight: Preflight | undefined
  readonly validate: Validate | undefined
  /** Why this input does not fit `input_schema`; undefined when it fits (or there is none). */
  readonly inputProblem: (input: unknown) => string | undefined
  readonly outputProblem: (result: unknown) => string | undefined
}

/** A job's checks take at most these (bag-manifest spec, "Limits"), and this long when their `timeout` is not given. */
const PREFLIGHT_TIMEOUT_S = 60
const VALIDATE_TIMEOUT_S = 600

const resolved = new Map<string, ResolvedJob>()

/**
 * A run's input (`what`: "input") or result ("output") checked against its job's schema: too deep
 * to take (domain/runs/Values.ts) first, then the schema's own problems, or undefined.
 */
export const valueCheck =
  (validators: FormatValidators) =>
  (schema: unknown, what: "input" | "output") =>
  (value: unknown): string | undefined => {
    const tooDeep = depthProblem(value, `the ${what}`)
    if (tooDeep !== undefined) return tooDeep
    if (schema === undefined) return undefined
    const problem = validators.validate(schema, value)
    return problem === undefined ? undefined : `${what} does not match the job's ${what}_schema: ${problem.replace(/\binputs\b/g, what)}`
  }

export const resolveJob = (address: string) =>
  Effect.gen(function* () {
    const malformed = jobAddressProblem(address)
    if (malformed !== undefined) return yield* new JobNotRunnable({ message: malformed })
    const bagName = address.slice(0, address.indexOf(":"))
    const bag = yield* (yield* BagStore).get(bagName).pipe(Effect.mapError((e) => new JobNotRunnable({ message: e.message, unreadable: e.reason === "Io" })))
    if (bag === undefined) return yield* new JobNotRunnable({ message: `bag ${bagName} is not installed here (svc bag install DIR)` })
    const installed = bag.jobs.find((j) => j.address === address)
    if (installed === undefined) {
      const versions = bag.jobs.filter((j) => j.address !== undefined).map((j) => j.address)
      return yield* new JobNotRunnable({
        message: `bag ${bagName} has no job ${address}${versions.length === 0 ? " (it has no versioned jobs)" : `; it has ${versions.join(", ")}`}`
      })
    }
    // An installed bag is fixed by its digest and its install (pinned constants): resolved once, until either changes.
    const key = `${address}\u0000${bag.digest}\u0000${bag.path}\u0000${bag.installedAt}`
    const known = resolved.get(key)
    if (known !== undefined) return known
    const snapshot = yield* (yield* BagDirectory).read(bag.path).pipe(Effect.mapError((e) => new JobNotRunnable({ message: `reading installed bag ${bagName}: ${e.message}`, unreadable: true })))
    const report = yield* checkSnapshot(snapshot, pinnedResolver(bag.pinnedConstants))
    const job = report.manifest?.jobs?.[installed.name]
    if (!report.valid || job === undefined) return yield* new JobNotRunnable({ message: `installed bag ${bagName} no longer passes svc bag check: reinstall it` })
    if (job.runs.using === "action") return yield* new JobNotRunnable({ message: `${address} is an action job: actions run in an agent's context, not as a run` })
    const validators = (yield* ManifestSource).validators
    const check = valueCheck(validators)
    const eligibility = remoteEligibility(job)
    const timeout = job.timeout === undefined ? undefined : durationSeconds(job.timeout)
    const made: ResolvedJob = {
      job: {
        address,
        bag: bagName,
        job: installed.name,
        digest: bag.digest,
        executor: job.runs.using,
        remoteEligible: eligibility.eligible,
        ownerOnly: eligibility.eligible ? [] : [explainEligibility(eligibility)],
        requiredLabels: [...(job.requires?.labels ?? [])],
        requiredBins: [...(job.requires?.bins ?? [])],
        bounds: [...(job.bounds ?? [])],
        timeoutMs: timeout === undefined ? null : timeout * 1000
      },
      bagDir: bag.path,
      runs: job.runs.using === "node" ? { using: "node", main: job.runs.main } : { using: "process", command: job.runs.command },
      env: job.runs.env ?? [],
      workingDirectory: job.runs["working-directory"],
      secrets: [...new Set([...(job.runs.secrets ?? []), ...(job.requires?.secrets ?? [])])],
      preflight:
        job.preflight === undefined
          ? undefined
          : { command: job.preflight.command, timeoutMs: (durationSeconds(job.preflight.timeout) ?? PREFLIGHT_TIMEOUT_S) * 1000, hint: job.preflight.hint },
      validate:
        job.validate === undefined
          ? undefined
          : { filesExist: job.validate.files_exist ?? [], command: job.validate.command, timeoutMs: (durationSeconds(job.validate.timeout) ?? VALIDATE_TIMEOUT_S) * 1000 },
      inputProblem: check(job.input_schema, "input"),
      outputProblem: check(job.output_schema, "output")
    }
    if (resolved.size >= 1_000) resolved.delete(resolved.keys().next().value!)
    resolved.set(key, made)
    return made
  })
