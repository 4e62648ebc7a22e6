/**
 * Whether a bag job may run on another machine (spec, worker-protocol.md, "Remote-eligible
 * bag job"): it carries a version, uses the `node` runtime, declares no secrets, and touches no
 * files. Every failing condition is returned, each as a code with readable text, so placement
 * and `svc bag show` can say exactly why a job stays on the owner.
 *
 * "Touches no files" (docs/manifest.md): the job declares nothing that reads or writes the
 * host's files outside its own bag: no `runs.working-directory`, no `preflight` probe, and no
 * `validate` (neither `files_exist` nor a `command`). Such a job's only input is its JSON input
 * and its only output its JSON result.
 */
import type { Job } from "./schema/Jobs.js"

export type IneligibilityCode = "unversioned" | "not-node" | "declares-secrets" | "touches-files"

export interface Ineligibility {
  readonly code: IneligibilityCode
  readonly text: string
}

export type RemoteEligibility =
  | { readonly eligible: true }
  | { readonly eligible: false; readonly reasons: ReadonlyArray<Ineligibility> }

export const remoteEligibility = (job: Job): RemoteEligibility => {
  const reasons: Array<Ineligibility> = []
  if (job.version === undefined) {
    reasons.push({ code: "unversioned", text: "it has no version, so it has no BAG:JOB@VERSION address" })
  }
  if (job.runs.using !== "node") {
    reasons.push({ code: "not-node", text: `it runs with ${job.runs.using}, not node` })
  }
  const secrets = [...(job.runs.using === "action" ? [] : job.runs.secrets ?? []), ...(job.requires?.secrets ?? [])]
  if (secrets.length > 0) {
    reasons.push({ code: "declares-secrets", text: `it declares secrets (${[...new Set(secrets)].join(", ")})` })
  }
  const touching: Array<string> = []
  if (job.runs.using !== "action" && job.runs["working-directory"] !== undefined) touching.push("runs.working-directory")
  if (job.preflight !== undefined) touching.push("preflight")
  if (job.validate !== undefined) touching.push("validate")
  if (touching.length > 0) {
    reasons.push({ code: "touches-files", text: `it touches files on the host (${touching.join(", ")})` })
  }
  return reasons.length === 0 ? { eligible: true } : { eligible: false, reasons }
}

export const explainEligibility = (e: RemoteEligibility): string =>
  e.eligible ? "remote-eligible" : `owner only: ${e.reasons.map((r) => r.text).join("; ")}`
