/**
 * `svc bag install DIR` and `svc bag remove NAME`. Installing validates the bag, computes its
 * content digest, and refuses to change what a versioned job address means: once
 * `BAG:JOB@VERSION` is installed with one digest, a bag with other content that still claims
 * that address is refused (bump the job's version instead).
 */
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type { Manifest } from "../../domain/manifest/Manifest.js"
import { formatJobAddress, versionString } from "../../domain/manifest/JobAddress.js"
import { shortDigest } from "../../domain/bags/Digest.js"
import { BagDirectory } from "./BagDirectory.js"
import { checkBag, type ReportedProblem } from "./BagCheck.js"
import { BagStore, BagStoreError, type InstalledBag, type InstalledJob, type PinnedConstant } from "./BagStore.js"
import { installedResolver } from "./BagConstants.js"
import type { ExternalConstant } from "../../domain/manifest/Constants.js"

export class BagInvalid extends Data.TaggedError("BagInvalid")<{
  readonly dir: string
  readonly problems: ReadonlyArray<ReportedProblem>
}> {
  override get message() {
    const errors = this.problems.filter((p) => p.severity === "error").length
    return `${this.dir}: bag.yaml has ${errors} problem${errors === 1 ? "" : "s"}; run svc bag check ${this.dir}`
  }
}

export class AddressTaken extends Data.TaggedError("AddressTaken")<{
  readonly addresses: ReadonlyArray<string>
  readonly installedDigest: string
  readonly newDigest: string
  readonly bag: string
}> {
  override get message() {
    const these = this.addresses.length === 1 ? "this job a new version" : "these jobs new versions"
    return `${this.addresses.join(", ")} ${this.addresses.length === 1 ? "is" : "are"} already installed with digest ${shortDigest(this.installedDigest)}, and this bag's content (${shortDigest(this.newDigest)}) differs (the digest covers the whole bag, not one job): a versioned job address never changes meaning, so give ${these}; or, to replace the copy installed here anyway (runs already recorded name the old digest), svc bag remove ${this.bag} first`
  }
}

/** The name a bag registers as: an extension registers as `<parent>/<name>`. */
export const registeredName = (manifest: Manifest): string =>
  manifest.extends === undefined ? manifest.name : `${manifest.extends}/${manifest.name}`

export const jobsOf = (manifest: Manifest): Array<InstalledJob> =>
  Object.entries(manifest.jobs ?? {}).map(([name, job]) => ({
    name,
    address: job.version === undefined ? undefined : formatJobAddress({ bag: registeredName(manifest), job: name, version: versionString(job.version) })
  }))

const pins = (used: ReadonlyArray<ExternalConstant>, installed: ReadonlyArray<InstalledBag>): Array<PinnedConstant> => {
  const resolve = installedResolver(installed)
  const out: Array<PinnedConstant> = []
  for (const { bag, name } of used) {
    const found = resolve(bag, name)
    if (found !== undefined && !out.some((p) => p.bag === bag && p.name === name)) out.push({ bag, name, value: found.value })
  }
  return out
}

/** `repaired`: the source is the one installed, but the installed copy had been written into; it was copied again. */
export type InstallOutcome = { readonly status: "installed" | "replaced" | "unchanged" | "repaired"; readonly bag: InstalledBag }

export const installBag = (dir: string) =>
  Effect.gen(function* () {
    const store = yield* BagStore
    const installed = yield* store.list
    const { snapshot, report } = yield* checkBag(dir, installedResolver(installed))
    if (report.manifest === undefined) return yield* new BagInvalid({ dir, problems: report.problems })
    const manifest = report.manifest
    const digest = yield* (yield* BagDirectory).digest(snapshot)
    const name = registeredName(manifest)
    const current = yield* store.get(name)
    // The same source: nothing to do, unless the installed copy no longer is that (a job wrote into it).
    const copyIntact = (bag: InstalledBag) =>
      Effect.flatMap(BagDirectory, (d) => Effect.map(Effect.flatMap(d.read(bag.path), d.digest), (now) => now === bag.digest)).pipe(Effect.orElseSucceed(() => false))
    const repairing = current !== undefined && current.digest === digest && !(yield* copyIntact(current))
    if (current !== undefined && current.digest === digest && !repairing) return { status: "unchanged", bag: current } satisfies InstallOutcome
    const jobs = jobsOf(manifest)
    if (current !== undefined && !repairing) {
      const taken = new Set(current.jobs.flatMap((j) => (j.address === undefined ? [] : [j.address])))
      const clashes = jobs.flatMap((j) => (j.address !== undefined && taken.has(j.address) ? [j.address] : []))
      if (clashes.length > 0) return yield* new AddressTaken({ addresses: clashes, installedDigest: current.digest, newDigest: digest, bag: name })
    }
    const now = yield* Clock.currentTimeMillis
    const bag = yield* store.put(snapshot, {
      name,
      description: manifest.description,
      digest,
      installedAt: new Date(now).toISOString(),
      source: snapshot.dir,
      jobs,
      constants: manifest.constants ?? {},
      pinnedConstants: pins(report.externalConstants, installed)
    })
    return { status: current === undefined ? "installed" : repairing ? "repaired" : "replaced", bag } satisfies InstallOutcome
  })

export const removeBag = (name: string) =>
  Effect.gen(function* () {
    const store = yield* BagStore
    const current = yield* store.get(name)
    if (current === undefined) {
      return yield* new BagStoreError({ reason: "NotInstalled", message: `no bag named ${JSON.stringify(name)} is installed` })
    }
    yield* store.remove(name)
    return current
  })
