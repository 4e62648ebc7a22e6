/**
 * What this machine offers the owners it works for (spec, "Advertisement"): capacity from
 * SVC_WORKFLOW_CAPACITY (default 4, at most 100), labels (operating system and architecture
 * always, plus SVC_WORKFLOW_LABELS=KEY=VALUE,...), executor capabilities, and the versioned,
 * remote-eligible jobs of installed bags with their digests. Each program those jobs require
 * (`requires.bins`) that is on this machine's PATH is advertised as the capability `bin:NAME`,
 * so placement can tell which hosts have it. What it holds but withholds is listed with the
 * reason.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type { HeldArtifact } from "../../domain/journal/Events.js"
import { labelProblem } from "../../domain/manifest/Formats.js"
import { explainEligibility, remoteEligibility } from "../../domain/manifest/RemoteEligibility.js"
import { holdsSecret, secretRefusal } from "../../domain/workers/Secrets.js"
import { BagDirectory } from "../bags/BagDirectory.js"
import { checkSnapshot } from "../bags/BagCheck.js"
import { pinnedResolver } from "../bags/BagConstants.js"
import { BagStore, HostPrograms } from "../bags/BagStore.js"
import { jsonBytes, MAX_ARTIFACTS, MAX_BODY_BYTES, MAX_LABELS } from "./Protocol.js"

export const DEFAULT_CAPACITY = 4
export const MAX_CAPACITY = 100

export class OfferConfigError extends Data.TaggedError("OfferConfigError")<{ readonly message: string }> {}

export interface Offer {
  readonly capacity: number
  readonly labels: ReadonlyArray<string>
  readonly capabilities: ReadonlyArray<string>
  readonly artifacts: ReadonlyArray<HeldArtifact>
  readonly withheld: ReadonlyArray<{ readonly job: string; readonly reason: string }>
}

/** Capacity from its variable: a whole number from 1 to 100. */
export const parseCapacity = (raw: string | undefined): number | OfferConfigError => {
  if (raw === undefined || raw.trim() === "") return DEFAULT_CAPACITY
  const n = Number(raw.trim())
  if (!/^\d+$/.test(raw.trim()) || n < 1 || n > MAX_CAPACITY) {
    return new OfferConfigError({ message: `SVC_WORKFLOW_CAPACITY must be a whole number from 1 to ${MAX_CAPACITY}, not ${JSON.stringify(raw)}` })
  }
  return n
}

/** Labels from SVC_WORKFLOW_LABELS (comma-separated KEY=VALUE), after os and arch. */
export const parseLabels = (raw: string | undefined, os: string, arch: string): ReadonlyArray<string> | OfferConfigError => {
  const labels = new Map<string, string>([
    ["os", os],
    ["arch", arch]
  ])
  for (const part of (raw ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    // Advertised, so journaled by the owner for ever: refused here, before the owner refuses it.
    if (holdsSecret(part)) return new OfferConfigError({ message: secretRefusal("SVC_WORKFLOW_LABELS") })
    // What the owner's route refuses is refused here, at start: a worker whose advertisements are
    // all refused said hello again and again, each hello journaled by the owner.
    const problem = labelProblem(part)
    if (problem !== undefined) return new OfferConfigError({ message: `SVC_WORKFLOW_LABELS holds ${JSON.stringify(part.length > 60 ? `${part.slice(0, 60)}…` : part)}, which ${problem}` })
    const [key, value] = [part.slice(0, part.indexOf("=")), part.slice(part.indexOf("=") + 1)]
    if (key === "os" || key === "arch") {
      if (value !== labels.get(key)) return new OfferConfigError({ message: `SVC_WORKFLOW_LABELS may not claim ${key}=${value}: this machine is ${key}=${labels.get(key)}` })
      continue
    }
    if (labels.has(key)) return new OfferConfigError({ message: `SVC_WORKFLOW_LABELS sets ${key} twice (${key}=${labels.get(key)}, ${key}=${value}): a label has one value` })
    labels.set(key, value)
  }
  if (labels.size > MAX_LABELS) return new OfferConfigError({ message: `SVC_WORKFLOW_LABELS sets ${labels.size - 2} labels; with os and arch a worker advertises at most ${MAX_LABELS}` })
  return [...labels].map(([k, v]) => `${k}=${v}`).sort()
}

export interface OfferSettings {
  readonly env: Readonly<Record<string, string | undefined>>
  readonly os: string
  readonly arch: string
  readonly capabilities: ReadonlyArray<string>
}

export const computeOffer = (settings: OfferSettings) =>
  Effect.gen(function* () {
    const capacity = parseCapacity(settings.env["SVC_WORKFLOW_CAPACITY"])
    if (capacity instanceof OfferConfigError) return yield* capacity
    const labels = parseLabels(settings.env["SVC_WORKFLOW_LABELS"], settings.os, settings.arch)
    if (labels instanceof OfferConfigError) return yield* labels
    const artifacts: Array<HeldArtifact> = []
    const bins = new Set<string>()
    const withheld: Array<{ job: string; reason: string }> = []
    const bags = yield* (yield* BagStore).list.pipe(Effect.orElseSucceed(() => []))
    const directory = yield* BagDirectory
    for (const bag of bags) {
      const snapshot = yield* directory.read(bag.path).pipe(Effect.option)
      if (snapshot._tag === "None") continue
      const report = yield* checkSnapshot(snapshot.value, pinnedResolver(bag.pinnedConstants))
      for (const [name, job] of Object.entries(report.manifest?.jobs ?? {})) {
        const address = bag.jobs.find((j) => j.name === name)?.address
        const eligibility = remoteEligibility(job)
        if (address !== undefined && eligibility.eligible) {
          artifacts.push({ address, digest: bag.digest })
          for (const bin of job.requires?.bins ?? []) bins.add(bin)
        }
        else withheld.push({ job: address ?? `${bag.name}:${name}`, reason: explainEligibility(eligibility) })
      }
    }
    const programs = yield* HostPrograms
    const present = yield* Effect.filter([...bins].sort(), (bin) => Effect.map(programs.which(bin), (found) => found !== undefined))
    const capabilities = [...settings.capabilities, ...present.map((bin) => `bin:${bin}`)].sort()
    const { offered, left } = fitArtifacts(artifacts, { capacity, labels, capabilities })
    for (const a of left) withheld.push({ job: a.address, reason: `not offered: one advertisement carries at most ${MAX_ARTIFACTS.toLocaleString("en-US")} jobs in ${MAX_BODY_BYTES / 1024} KiB (the owner's limits), and this machine's other jobs, earlier in address order, filled it` })
    return { capacity, labels, capabilities, artifacts: offered, withheld } satisfies Offer
  })

/**
 * The artifacts one advertisement can carry, in address order, and those left out: the owner
 * refuses an advertisement of more than MAX_ARTIFACTS or over MAX_BODY_BYTES, and a worker whose
 * every advertisement is refused offered nothing at all (and said hello again and again).
 */
export const fitArtifacts = (
  artifacts: ReadonlyArray<HeldArtifact>,
  rest: { readonly capacity: number; readonly labels: ReadonlyArray<string>; readonly capabilities: ReadonlyArray<string> }
): { readonly offered: ReadonlyArray<HeldArtifact>; readonly left: ReadonlyArray<HeldArtifact> } => {
  // The rest of the body at its largest (fence and busy as long as they can be), and room to spare.
  const others = jsonBytes({ kind: "advertise", fence: Number.MAX_SAFE_INTEGER, capacity: rest.capacity, labels: rest.labels, capabilities: rest.capabilities, artifacts: [], busy: 100 })
  let room = MAX_BODY_BYTES - others - 1024
  const sorted = [...artifacts].sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0))
  const offered: Array<HeldArtifact> = []
  const left: Array<HeldArtifact> = []
  for (const a of sorted) {
    const size = jsonBytes(a) + 1
    if (offered.length < MAX_ARTIFACTS && size <= room) {
      offered.push(a)
      room -= size
    } else left.push(a)
  }
  return { offered, left }
}
