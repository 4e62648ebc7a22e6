/**
 * `svc bag show` and `svc bag doctor`: what an installed bag offers, and what it lacks on this
 * machine. What depends on other installed bags is judged here, not by `check` (spec: an unmet
 * requirement drops the bag's tools with one message, or is a warning when `optional`).
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { Manifest } from "../../domain/manifest/Manifest.js"
import { explainEligibility, remoteEligibility, type RemoteEligibility } from "../../domain/manifest/RemoteEligibility.js"
import { DependencyPackage } from "../../domain/manifest/schema/Composition.js"
import { BagDirectory } from "./BagDirectory.js"
import { checkSnapshot } from "./BagCheck.js"
import { BagStore, BagStoreError, HostPrograms, type InstalledBag } from "./BagStore.js"
import { ManifestSource } from "./ManifestSource.js"
import { pinDrift, pinnedResolver } from "./BagConstants.js"
import { shortDigest } from "../../domain/bags/Digest.js"

export interface Finding {
  readonly severity: "error" | "warning"
  readonly message: string
}

export interface JobSummary {
  readonly name: string
  readonly address: string | undefined
  readonly runs: string
  readonly digest: string
  readonly remote: RemoteEligibility
  readonly explanation: string
  /** What a host must have to run it (`requires.labels`, `requires.bins`). */
  readonly requiredLabels: ReadonlyArray<string>
  readonly requiredBins: ReadonlyArray<string>
}

export interface BagSummary {
  readonly name: string
  readonly description: string
  readonly version: string | undefined
  readonly digest: string
  readonly installedAt: string
  readonly source: string
  readonly jobs: ReadonlyArray<JobSummary>
  readonly services: ReadonlyArray<string>
  readonly schedules: ReadonlyArray<string>
  readonly scripts: ReadonlyArray<string>
  readonly findings: ReadonlyArray<Finding>
}

const loadManifest = (bag: InstalledBag) =>
  Effect.gen(function* () {
    const snapshot = yield* (yield* BagDirectory).read(bag.path)
    const report = yield* checkSnapshot(snapshot, pinnedResolver(bag.pinnedConstants))
    if (report.manifest === undefined) {
      return yield* new BagStoreError({ reason: "Corrupt", message: `the installed copy of ${bag.name} no longer passes bag check; reinstall it` })
    }
    return report.manifest
  }).pipe(Effect.catchTag("BagDirectoryError", (e) => new BagStoreError({ reason: "Corrupt", message: e.message })))

const getInstalled = (name: string) =>
  Effect.gen(function* () {
    const bag = yield* (yield* BagStore).get(name)
    if (bag === undefined) return yield* new BagStoreError({ reason: "NotInstalled", message: `no bag named ${JSON.stringify(name)} is installed` })
    return bag
  })

/** Requirements, composed bags and other bags' constants, judged against what is installed. */
const relationFindings = (bag: InstalledBag, manifest: Manifest, installed: ReadonlyArray<InstalledBag>) =>
  Effect.gen(function* () {
    const names = new Set(installed.map((b) => b.name))
    const findings: Array<Finding> = []
    const unmet = Object.entries(manifest.requires ?? {}).filter(([bag]) => !names.has(bag))
    const hard = unmet.filter(([, r]) => r.optional !== true)
    if (hard.length > 0) {
      const why = hard.map(([bag, r]) => `${bag}${r.reason === undefined ? "" : ` (${r.reason})`}`).join(", ")
      findings.push({ severity: "error", message: `tools dropped: requires ${why}, not installed` })
    }
    for (const [bag, r] of unmet.filter(([, r]) => r.optional === true)) {
      findings.push({ severity: "warning", message: `optional requirement ${bag} is not installed${r.reason === undefined ? "" : ` (${r.reason})`}; the bag loads without it` })
    }
    const composed = Array.isArray(manifest.bags) ? manifest.bags : Object.keys(manifest.bags ?? {})
    for (const bag of composed) {
      if (!names.has(bag)) findings.push({ severity: "error", message: `composes bag ${bag}, which is not installed` })
    }
    // An extension left without its parent (removed since) was said to be ok.
    if (manifest.extends !== undefined && !names.has(manifest.extends)) {
      findings.push({ severity: "error", message: `extends bag ${manifest.extends}, which is not installed: install it again, or remove this extension` })
    }
    for (const drift of pinDrift(bag, installed)) findings.push({ severity: "warning", message: drift })
    return findings
  })

/** An installed bag that extends another, composes it, or requires it (not optionally): the other's removal leaves it broken. */
export interface Dependent {
  readonly bag: string
  readonly relation: "composes" | "requires" | "extends"
}

/**
 * The installed bags that extend `name`, compose it or require it: what its removal leaves
 * broken, which `svc bag doctor` reports (the docs audit removed a composed bag without a word;
 * an extension left without its parent, doctor says nothing of yet). A bag
 * whose installed copy cannot be read is left out (doctor says what is wrong with it).
 */
export const dependentsOf = (name: string) =>
  Effect.gen(function* () {
    const out: Array<Dependent> = []
    for (const bag of yield* (yield* BagStore).list) {
      if (bag.name === name) continue
      const manifest = yield* Effect.either(loadManifest(bag))
      if (Either.isLeft(manifest)) continue
      const m = manifest.right
      const composed = Array.isArray(m.bags) ? m.bags : Object.keys(m.bags ?? {})
      if (m.extends === name) out.push({ bag: bag.name, relation: "extends" })
      else if (composed.includes(name)) out.push({ bag: bag.name, relation: "composes" })
      else if (m.requires?.[name] !== undefined && m.requires[name].optional !== true) out.push({ bag: bag.name, relation: "requires" })
    }
    return out
  })

export const showBag = (name: string) =>
  Effect.gen(function* () {
    const bag = yield* getInstalled(name)
    const manifest = yield* loadManifest(bag)
    const installed = yield* (yield* BagStore).list
    const jobs = Object.entries(manifest.jobs ?? {}).map(([jobName, job]): JobSummary => {
      const remote = remoteEligibility(job)
      return {
        name: jobName,
        address: bag.jobs.find((j) => j.name === jobName)?.address,
        runs: job.runs.using,
        digest: bag.digest,
        remote,
        explanation: explainEligibility(remote),
        requiredLabels: job.requires?.labels ?? [],
        requiredBins: job.requires?.bins ?? []
      }
    })
    return {
      name: bag.name,
      description: bag.description,
      version: manifest.version,
      digest: bag.digest,
      installedAt: bag.installedAt,
      source: bag.source,
      jobs,
      services: Object.keys(manifest.services ?? {}),
      schedules: Object.keys(manifest.schedules ?? {}),
      scripts: Object.keys(manifest.scripts ?? {}),
      findings: [...(yield* relationFindings(bag, manifest, installed)), ...(yield* dependencyFindings(bag, manifest)).findings]
    } satisfies BagSummary
  })

export interface DoctorReport {
  readonly name: string
  readonly findings: ReadonlyArray<Finding>
}

const PackageMap = Schema.Record({ key: Schema.String, value: DependencyPackage })
const decodePackages = Schema.decodeUnknownEither(PackageMap, { onExcessProperty: "error" })

/** Dependencies as a map: inline, or from the YAML file or package-bundle file the manifest names. */
const dependencyMap = (bag: InstalledBag, manifest: Manifest) =>
  Effect.gen(function* () {
    const deps = manifest.dependencies
    if (deps === undefined) return { packages: {}, findings: [] as Array<Finding> }
    if (typeof deps !== "string") return { packages: deps, findings: [] as Array<Finding> }
    const text = yield* (yield* BagDirectory).readText(bag.path, deps).pipe(Effect.orElseSucceed(() => undefined))
    if (text === undefined) return { packages: {}, findings: [{ severity: "error", message: `dependencies file ${deps} cannot be read` }] as Array<Finding> }
    if (/\.ya?ml$/.test(deps)) {
      const parsed = (yield* ManifestSource).parse(text)
      const decoded = decodePackages(parsed.value ?? {})
      return Either.isRight(decoded)
        ? { packages: decoded.right, findings: [] as Array<Finding> }
        : { packages: {}, findings: [{ severity: "error", message: `dependencies file ${deps} is not a map of packages with a reason each` }] as Array<Finding> }
    }
    // A package bundle: plain lines naming formulae and casks (`jq`, or Brewfile's `brew "jq"`).
    const packages: Record<string, DependencyPackage> = {}
    for (const line of text.split("\n")) {
      const trimmed = line.replace(/#.*$/, "").trim()
      if (trimmed === "") continue
      const m = /^(?:brew|cask)\s+["']([^"']+)["']/.exec(trimmed)
      const pkg = m?.[1] ?? trimmed.split(/\s+/)[0]!
      packages[pkg] = { reason: `listed in ${deps}` }
    }
    return { packages, findings: [] as Array<Finding> }
  })

/** Whether the installed copy still has the digest recorded at install (a job may have written into it). */
const integrityFindings = (bag: InstalledBag) =>
  Effect.gen(function* () {
    const directory = yield* BagDirectory
    const now = yield* directory.digest(yield* directory.read(bag.path))
    if (now === bag.digest) return [] as Array<Finding>
    return [
      {
        severity: "error",
        message: `the installed copy no longer has the digest recorded at install (${shortDigest(bag.digest)}, now ${shortDigest(now)}): something wrote into ${bag.path} (a job writing to its working directory?); install the bag again`
      }
    ] as Array<Finding>
  }).pipe(Effect.catchTag("BagDirectoryError", (e) => Effect.succeed([{ severity: "error", message: `the installed copy cannot be read: ${e.message}` }] as Array<Finding>)))

/**
 * Each dependency not on PATH here, with its install command for this platform: a failure, or a
 * warning when `optional` (bag-manifest spec: reported by `svc bag show` and `svc bag doctor`).
 * Also answers the programs it looked up, so doctor does not look them up twice.
 */
const dependencyFindings = (bag: InstalledBag, manifest: Manifest) =>
  Effect.gen(function* () {
    const host = yield* HostPrograms
    const { packages, findings } = yield* dependencyMap(bag, manifest)
    for (const [pkg, spec] of Object.entries(packages)) {
      const program = spec.bin ?? pkg
      const found = yield* host.which(program)
      if (found !== undefined) continue
      const install = host.platform === "macos" ? spec.install?.macos : host.platform === "linux" ? spec.install?.linux : undefined
      const how = install === undefined ? "no install command is given for this platform" : `install it with: ${install}`
      findings.push({
        severity: spec.optional === true ? "warning" : "error",
        message: `${program} is not on PATH (${spec.reason}); ${how}`
      })
    }
    return { findings, checked: new Set(Object.entries(packages).map(([pkg, spec]) => spec.bin ?? pkg)) }
  })

export const doctorBag = (name: string) =>
  Effect.gen(function* () {
    const bag = yield* getInstalled(name)
    const manifest = yield* loadManifest(bag)
    const host = yield* HostPrograms
    const dependencies = yield* dependencyFindings(bag, manifest)
    const findings = [...(yield* integrityFindings(bag)), ...dependencies.findings]
    // The programs its jobs require (`requires.bins`): without them here, their runs are placed elsewhere or not at all.
    const checked = dependencies.checked
    const needers = new Map<string, Array<string>>()
    for (const [jobName, job] of Object.entries(manifest.jobs ?? {})) {
      for (const bin of job.requires?.bins ?? []) if (!checked.has(bin)) needers.set(bin, [...(needers.get(bin) ?? []), jobName])
    }
    for (const [bin, jobs] of needers) {
      if ((yield* host.which(bin)) !== undefined) continue
      findings.push({
        severity: "error",
        message: `${bin} is not on PATH, and ${jobs.length === 1 ? `job ${jobs[0]} requires it` : `jobs ${jobs.join(", ")} require it`} (requires.bins): no run of ${jobs.length === 1 ? "it" : "them"} is placed on this machine`
      })
    }
    const installed = yield* (yield* BagStore).list
    findings.push(...(yield* relationFindings(bag, manifest, installed)))
    return { name: bag.name, findings } satisfies DoctorReport
  })

export const doctorAll = Effect.gen(function* () {
  const bags = yield* (yield* BagStore).list
  return yield* Effect.forEach(bags, (b) => doctorBag(b.name))
})
