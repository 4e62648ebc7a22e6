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
import { error } from "../../domain/manifest/Problem.js"
import { formatJobAddress, versionString } from "../../domain/manifest/JobAddress.js"
import { shortDigest } from "../../domain/bags/Digest.js"
import { BagDirectory, type BagDirectoryError, type BagSnapshot } from "./BagDirectory.js"
import { checkBag, checkSource, checkText, compositionOf, resolveFrom, type ReportedProblem } from "./BagCheck.js"
import { BagStore, BagStoreError, type InstalledBag, type InstalledJob, type PinnedConstant } from "./BagStore.js"
import { installedResolver } from "./BagConstants.js"
import { ManifestSource } from "./ManifestSource.js"
import { UNRESOLVED, type ConstantResolver, type ExternalConstant } from "../../domain/manifest/Constants.js"

export class BagInvalid extends Data.TaggedError("BagInvalid")<{
  readonly dir: string
  readonly problems: ReadonlyArray<ReportedProblem>
  /** For a bag installed as a child: the bags that compose it, the one asked first. */
  readonly composedBy?: ReadonlyArray<string>
}> {
  override get message() {
    const errors = this.problems.filter((p) => p.severity === "error").length
    const via = this.composedBy === undefined || this.composedBy.length === 0 ? "" : ` (composed by ${this.composedBy.join(" > ")})`
    return `${this.dir}: bag.yaml${via} has ${errors} problem${errors === 1 ? "" : "s"}; run svc bag check ${this.dir}`
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

const pins = (used: ReadonlyArray<ExternalConstant>, resolve: ConstantResolver): Array<PinnedConstant> => {
  const out: Array<PinnedConstant> = []
  for (const { bag, name } of used) {
    const found = resolve(bag, name)
    if (found !== undefined && "value" in found && !out.some((p) => p.bag === bag && p.name === name)) out.push({ bag, name, value: found.value })
  }
  return out
}

/** `repaired`: the source is the one installed, but the installed copy had been written into; it was copied again. */
export type InstallOutcome = { readonly status: "installed" | "replaced" | "unchanged" | "repaired"; readonly bag: InstalledBag }

/** A bag with the children it composes from a `path` (installed first), and what could not be fetched. */
export interface TreeOutcome extends InstallOutcome {
  readonly children: ReadonlyArray<TreeOutcome>
  readonly notes: ReadonlyArray<string>
}

/** A composition that cannot be installed as written: a cycle, or a child whose bag.yaml names another bag. */
export class CompositionProblem extends Data.TaggedError("CompositionProblem")<{ readonly message: string }> {}

/**
 * `svc bag install DIR`: the bag, after the children it composes from a `path` (bag-manifest
 * spec, "bags": "installing the parent fetches it"), each installed as `svc bag install` would,
 * recursively. A child from a Git remote (`repo`) is not fetched (svc fetches nothing from the
 * network): a note says so when it is not installed yet.
 *
 * All or nothing: every bag of the composition is read and checked first (a parent with the
 * constants its children will have once installed), and only when none is refused is any of
 * them installed, children first.
 */
export const installBag = (
  dir: string,
  inUse: InUseGuard = noneInUse
): Effect.Effect<TreeOutcome, BagInvalid | AddressTaken | CompositionProblem | BagDirectoryError | BagStoreError | BagInUse, BagStore | BagDirectory | ManifestSource> =>
  Effect.flatMap(BagStore, (store) =>
    store.exclusive(
      Effect.gen(function* () {
        const installed = yield* store.list
        const plan = yield* planTree(dir, [], new Map(), installed)
        // Nothing is replaced when one copy of the tree is in use: every one is asked first.
        yield* guardPlan(plan, inUse)
        return yield* applyPlan(plan)
      })
    )
  )

/**
 * Jobs running on this machine run from an installed bag's copy: replacing it swaps their code as
 * they run (what they load later comes from the new version, and their result is recorded under
 * the digest they started with), and removing it fails them. So an install or removal asks first
 * (the CLI asks the runtime, GET /bags/in-use) and is refused while a copy it would change is used.
 */
export class BagInUse extends Data.TaggedError("BagInUse")<{ readonly message: string }> {}
export type InUseGuard = (bag: InstalledBag, change: "replace" | "remove") => Effect.Effect<void, BagInUse>
const noneInUse: InUseGuard = () => Effect.void

const guardPlan = (plan: Planned, inUse: InUseGuard): Effect.Effect<void, BagInUse> =>
  Effect.gen(function* () {
    for (const child of plan.children) yield* guardPlan(child, inUse)
    if (plan.current !== undefined && plan.status !== "unchanged") yield* inUse(plan.current, "replace")
  })

/**
 * `svc bag check DIR` for a bag that composes children from a `path`: the bag judged alone
 * (checkBag), then, when that passes, its whole composition as install would plan it, without
 * the bags installed here (check judges sources, not this machine): a circle, a misnamed child,
 * a child with problems of its own, two different bags of one name. What install would refuse
 * is said at the bag's `bags` key, the child's own problems with their places in its bag.yaml.
 */
export const checkBagWhole = (dir: string) =>
  Effect.gen(function* () {
    const checked = yield* checkBag(dir)
    const raw = (yield* ManifestSource).parse(checked.snapshot.manifestText).value
    // Planned even when the bag alone has problems: those its children's constants bring (what
    // install would say) are said beside them, not after they are fixed.
    if (compositionOf(raw).paths.length === 0) return checked
    // Other bags' constants stay opaque here, as in checkBag: the machine's bags are not asked.
    const problem = yield* planTree(dir, [], new Map(), [], undefined, true).pipe(
      Effect.as(undefined),
      Effect.catchAll((e) =>
        Effect.succeed(
          e._tag !== "BagInvalid"
            ? `the composition cannot be installed: ${e.message}`
            : (e.composedBy ?? []).length === 0
              ? // This bag itself, with its children's constants resolved: its problems at their own places.
                e.problems
              : `the composition cannot be installed: ${e.dir}/bag.yaml has problems: ${e.problems
                  .filter((p) => p.severity === "error")
                  .map((p) => `bag.yaml:${p.line}:${p.column}: ${p.path}: ${p.message}`)
                  .join("; ")}`
        )
      )
    )
    if (problem === undefined) return checked
    if (typeof problem !== "string") return { snapshot: checked.snapshot, report: { ...checked.report, valid: false, problems: problem } }
    // The check said it already, at its own place (a child's path leading nowhere): not twice.
    if (checked.report.problems.some((p) => p.severity === "error" && (p.path === "bags" || p.path.startsWith("bags.")))) return checked
    return { snapshot: checked.snapshot, report: yield* checkText(checked.snapshot.manifestText, checked.snapshot.listing, undefined, [error(["bags"], problem, "key")]) }
  })

/** A bag of the composition, judged and ready to install: nothing is written yet. */
interface Planned {
  readonly status: InstallOutcome["status"]
  readonly snapshot: BagSnapshot
  /** The bag as it will be installed (without the copy's path), or as it is when unchanged. */
  readonly record: Omit<InstalledBag, "path">
  /** Unchanged: the bag installed already. */
  readonly current: InstalledBag | undefined
  readonly children: ReadonlyArray<Planned>
  readonly notes: ReadonlyArray<string>
}

/** The bags planned so far, by name: what a parent checked later resolves its constants against. */
type Staged = Map<string, { readonly dir: string; readonly digest: string; readonly constants: Readonly<Record<string, unknown>> }>

const planTree = (
  dir: string,
  chain: ReadonlyArray<{ readonly dir: string; readonly name: string }>,
  staged: Staged,
  installed: ReadonlyArray<InstalledBag>,
  /** For a child: the name its parent composes it as, and how the parent named where it is. */
  expected?: { readonly name: string; readonly by: string; readonly path: string },
  /** For `svc bag check`: other bags' constants are not resolved (opaque, as checkBag leaves them). */
  checking = false
): Effect.Effect<Planned, BagInvalid | AddressTaken | CompositionProblem | BagDirectoryError | BagStoreError, BagStore | BagDirectory | ManifestSource> =>
  Effect.gen(function* () {
    // Its children first, read from the bag.yaml as written: the whole check comes once they
    // are planned, since this bag may use their constants.
    const snapshot = yield* (yield* BagDirectory).read(dir)
    const raw = (yield* ManifestSource).parse(snapshot.manifestText).value
    const doc = typeof raw === "object" && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {}
    const name = typeof doc["name"] === "string" ? (typeof doc["extends"] === "string" ? `${doc["extends"]}/${doc["name"]}` : doc["name"]) : dir
    if (expected !== undefined && expected.name !== name) {
      return yield* new CompositionProblem({
        message: `${expected.by} composes ${expected.name} from ${expected.path}, but the bag there is named ${name}: name it ${expected.name} in its bag.yaml, or compose ${name}`
      })
    }
    const here = [...chain, { dir: snapshot.dir, name }]
    const children: Array<Planned> = []
    const notes: Array<string> = []
    // What the check would refuse is left to it (below): only a well-formed source is followed.
    const composition = compositionOf(raw)
    for (const { name: childName, path } of composition.paths) {
      const childDir = resolveFrom(snapshot.dir, path)
      const looped = here.findIndex((c) => c.dir === childDir)
      if (looped >= 0) {
        return yield* new CompositionProblem({ message: `bags compose each other in a circle: ${[...here.slice(looped).map((c) => c.name), childName].join(" composes ")}` })
      }
      const child = planTree(childDir, here, staged, installed, { name: childName, by: name, path }, checking).pipe(
        // Said as the parent's: which child, from where (a bare "does not exist" named neither).
        Effect.catchTag("BagDirectoryError", (e) => Effect.fail(new CompositionProblem({ message: `${name} composes ${childName} from ${path}, where there is no bag: ${e.message}` })))
      )
      children.push(yield* child)
    }
    for (const { name: childName, repo } of composition.repos) {
      if (!staged.has(childName) && !installed.some((b) => b.name === childName)) {
        notes.push(`${name} composes ${childName} from the Git remote ${repo}, which svc does not fetch: install it with svc bag install DIR (svc bag doctor reports it missing until then)`)
      }
    }
    const planned = yield* planOne(dir, snapshot, staged, installed, checking ? { name, doc } : undefined).pipe(
      // A child's problems say which bags compose it: the one asked for is not the one refused.
      Effect.catchTag("BagInvalid", (e) => Effect.fail(chain.length === 0 ? e : new BagInvalid({ dir: e.dir, problems: e.problems, composedBy: chain.map((c) => c.name) })))
    )
    return { ...planned, children, notes }
  })

const recordOf = (manifest: Manifest, snapshot: BagSnapshot, digest: string, pinnedConstants: ReadonlyArray<PinnedConstant>): Omit<InstalledBag, "path"> => ({
  name: registeredName(manifest),
  description: manifest.description.trimEnd(),
  digest,
  installedAt: "",
  source: snapshot.dir,
  jobs: jobsOf(manifest),
  constants: manifest.constants ?? {},
  pinnedConstants: [...pinnedConstants]
})

/**
 * For `svc bag check`: a bag without problems whose manifest stays undecoded (it uses a constant
 * of a bag outside the composition, which check does not resolve): what the plan needs of it,
 * its name and constants, as planTree read them from its source.
 */
const uncheckedRecord = ({ name, doc }: AsWritten, snapshot: BagSnapshot, digest: string): Omit<InstalledBag, "path"> => {
  const constants = doc["constants"]
  return {
    name,
    description: "",
    digest,
    installedAt: "",
    source: snapshot.dir,
    jobs: [],
    constants: typeof constants === "object" && constants !== null && !Array.isArray(constants) ? (constants as Record<string, unknown>) : {},
    pinnedConstants: []
  }
}

/** A bag's bag.yaml as written (parsed, not checked) and the name it registers as: what planTree read. */
interface AsWritten {
  readonly name: string
  readonly doc: Readonly<Record<string, unknown>>
}

/**
 * One bag, read already (`snapshot`), checked against the bags installed now and those planned
 * before it. `checking` (`svc bag check`): other bags' constants are not resolved, and the bag as
 * written stands in for a manifest they leave undecoded.
 */
const planOne = (dir: string, snapshot: BagSnapshot, staged: Staged, installed: ReadonlyArray<InstalledBag>, checking?: AsWritten) =>
  Effect.gen(function* () {
    const fromInstalled = installedResolver(installed)
    // The composition's bags resolve from what is planned; others from the bags installed here,
    // or, for `svc bag check`, not at all (check judges sources, not this machine).
    const resolve: ConstantResolver = (bag, name) => {
      const planned = staged.get(bag)
      if (planned === undefined) return checking !== undefined ? UNRESOLVED : fromInstalled(bag, name)
      return Object.prototype.hasOwnProperty.call(planned.constants, name) ? { value: planned.constants[name] } : undefined
    }
    const report = yield* checkSource(snapshot, resolve)
    const digest = yield* (yield* BagDirectory).digest(snapshot)
    const record =
      report.manifest !== undefined
        ? recordOf(report.manifest, snapshot, digest, pins(report.externalConstants, resolve))
        : checking !== undefined && report.valid
          ? uncheckedRecord(checking, snapshot, digest)
          : undefined
    if (record === undefined) return yield* new BagInvalid({ dir, problems: report.problems })
    const name = record.name
    const earlier = staged.get(name)
    if (earlier !== undefined) {
      // Composed twice (two parents share a child): one bag, installed once.
      if (earlier.digest === digest) return { status: "unchanged", snapshot, record, current: undefined } satisfies Omit<Planned, "children" | "notes">
      return yield* new CompositionProblem({ message: `the composition holds two different bags named ${name}: ${earlier.dir} and ${snapshot.dir}` })
    }
    staged.set(name, { dir: snapshot.dir, digest, constants: record.constants })
    const current = installed.find((b) => b.name === name)
    // The same source: nothing to do, unless the installed copy no longer is that (a job wrote into it).
    const copyIntact = (bag: InstalledBag) =>
      Effect.flatMap(BagDirectory, (d) => Effect.map(Effect.flatMap(d.read(bag.path), d.digest), (now) => now === bag.digest)).pipe(Effect.orElseSucceed(() => false))
    const repairing = current !== undefined && current.digest === digest && !(yield* copyIntact(current))
    if (current !== undefined && current.digest === digest && !repairing) return { status: "unchanged", snapshot, record, current } satisfies Omit<Planned, "children" | "notes">
    if (current !== undefined && !repairing) {
      const taken = new Set(current.jobs.flatMap((j) => (j.address === undefined ? [] : [j.address])))
      const clashes = record.jobs.flatMap((j) => (j.address !== undefined && taken.has(j.address) ? [j.address] : []))
      if (clashes.length > 0) return yield* new AddressTaken({ addresses: clashes, installedDigest: current.digest, newDigest: digest, bag: name })
    }
    const status: InstallOutcome["status"] = current === undefined ? "installed" : repairing ? "repaired" : "replaced"
    return { status, snapshot, record, current } satisfies Omit<Planned, "children" | "notes">
  })

/** Installs what the plan changes, children first; a bag composed twice is installed once. */
const applyPlan = (plan: Planned): Effect.Effect<TreeOutcome, BagStoreError, BagStore> =>
  Effect.gen(function* () {
    const children: Array<TreeOutcome> = []
    for (const child of plan.children) children.push(yield* applyPlan(child))
    const store = yield* BagStore
    if (plan.status === "unchanged") {
      // Composed twice: the first visit installed it; this one finds it so.
      const bag = plan.current ?? (yield* store.get(plan.record.name))
      if (bag !== undefined) return { status: "unchanged", bag, children, notes: plan.notes }
    }
    const now = yield* Clock.currentTimeMillis
    const bag = yield* store.put(plan.snapshot, { ...plan.record, installedAt: new Date(now).toISOString() })
    return { status: plan.status === "unchanged" ? "installed" : plan.status, bag, children, notes: plan.notes }
  })

export const removeBag = (name: string, inUse: InUseGuard = noneInUse) =>
  Effect.flatMap(BagStore, (store) =>
    store.exclusive(
      Effect.gen(function* () {
        const current = yield* store.get(name)
        if (current === undefined) {
          return yield* new BagStoreError({ reason: "NotInstalled", message: `no bag named ${JSON.stringify(name)} is installed` })
        }
        yield* inUse(current, "remove")
        yield* store.remove(name)
        return current
      })
    )
  )
