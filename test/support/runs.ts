/** What the owner's runs need in app-level tests: a real executor, output files in a temp dir, an owner host without bags. */
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import { OwnerHost, type OwnerHostSettings } from "../../src/app/runs/Dispatcher.js"
import { JobNotRunnable, type ResolvedJob } from "../../src/app/runs/JobCatalog.js"
import * as ChildExecutor from "../../src/infra/runs/ChildExecutor.js"
import * as FileRunFiles from "../../src/infra/runs/FileRunFiles.js"
import { Checkpoints } from "../../src/app/journal/Checkpoints.js"
import { Journal, layerMemory } from "../../src/app/journal/Journal.js"
import { layer as projectionsLayer } from "../../src/app/journal/Projections.js"
import { layerWithRuns, OwnerAddress } from "../../src/app/workers/Owner.js"
import * as NodeHashing from "../../src/infra/journal/NodeHashing.js"
import * as NodeEntropy from "../../src/infra/workers/NodeEntropy.js"

export const noBagsHost: OwnerHostSettings = {
  capacity: 4,
  labels: ["arch=x64", "os=linux"],
  capabilities: ["node", "process"],
  bins: () => Effect.succeed([]),
  resolve: (address) => Effect.fail(new JobNotRunnable({ message: `no bag holds ${address} here` })),
  withSlot: (effect) => effect
}

/**
 * `BAG:JOB@VERSION` as JobCatalog resolves it: a remote-eligible node job running `main.mjs` in
 * `bagDir`, requiring nothing and checking nothing unless `over` says otherwise (the app tests'
 * fixture).
 */
export const nodeJob = (
  address: string,
  digest: string,
  bagDir: string,
  over: Partial<ResolvedJob["job"]> & Partial<Pick<ResolvedJob, "inputProblem" | "outputProblem">> = {}
): ResolvedJob => {
  const { inputProblem = () => undefined, outputProblem = () => undefined, ...job } = over
  const [bag = "", rest = ""] = address.split(":")
  return {
    job: { address, bag, job: rest.split("@")[0] ?? "", digest, executor: "node", remoteEligible: true, ownerOnly: [], requiredLabels: [], requiredBins: [], bounds: [], timeoutMs: null, ...job },
    bagDir,
    runs: { using: "node", main: "main.mjs" },
    env: [],
    workingDirectory: undefined,
    secrets: [],
    preflight: undefined,
    validate: undefined,
    inputProblem,
    outputProblem
  }
}

/**
 * A host holding these jobs (address: digest) and nothing else, as far as its workers' jobs are
 * judged against its own (svc workers status); a run of one cannot be submitted.
 */
export const hostHolding = (jobs: Readonly<Record<string, string>>): OwnerHostSettings => ({
  ...noBagsHost,
  resolve: (address) => {
    const digest = jobs[address]
    return digest === undefined ? noBagsHost.resolve(address) : Effect.succeed(nodeJob(address, digest, "/nonexistent"))
  }
})

/** The output files' directory: made when the layer is built, removed with everything in it when its scope closes. */
const runFilesDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "svc-runs-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

export const runsDeps = (host: OwnerHostSettings = noBagsHost) =>
  Layer.mergeAll(ChildExecutor.layer, Layer.unwrapScoped(Effect.map(runFilesDir, FileRunFiles.layer)), Layer.succeed(OwnerHost, host))

/**
 * The owner with its runs over the memory journal, no checkpoints, node:crypto hashing and
 * entropy, and a host with no bags: the real deciders and projections, for app-level tests.
 */
export const memoryOwnerWith = (host: OwnerHostSettings, journal: Layer.Layer<Journal> = layerMemory) => layerWithRuns.pipe(
  Layer.provideMerge(projectionsLayer),
  Layer.provideMerge(
    Layer.mergeAll(
      journal,
      Layer.succeed(Checkpoints, { write: () => Effect.void, latest: Effect.succeed(undefined), snapshot: Effect.succeed(undefined) }),
      NodeHashing.layer,
      NodeEntropy.layer,
      runsDeps(host),
      Layer.succeed(OwnerAddress, { url: "https://owner.test:7443", fingerprint: "ab".repeat(32) })
    )
  )
)

export const memoryOwner = memoryOwnerWith(noBagsHost)

/**
 * The memory journal with a gate: an append whose first event is of a type `hold` names waits
 * until `release` of that type (and `arrived` completes when one is waiting). Puts two commands'
 * commits in the order a race between them would, without timing.
 */
export const gatedJournal = () => {
  const gates = new Map<string, { readonly arrived: Deferred.Deferred<void>; readonly open: Deferred.Deferred<void> }>()
  const gate = (tag: string) => {
    let g = gates.get(tag)
    if (g === undefined) gates.set(tag, (g = { arrived: Deferred.unsafeMake(FiberId.none), open: Deferred.unsafeMake(FiberId.none) }))
    return g
  }
  const layer = Layer.effect(
    Journal,
    Effect.map(Journal, (inner) => ({
      ...inner,
      append: (command: Parameters<typeof inner.append>[0]) => {
        const g = gates.get(command.events[0]?._tag ?? "")
        return g === undefined ? inner.append(command) : Effect.zipRight(Effect.zipRight(Deferred.succeed(g.arrived, undefined), Deferred.await(g.open)), inner.append(command))
      }
    }))
  ).pipe(Layer.provide(layerMemory))
  return {
    layer,
    hold: (tag: string) => void gate(tag),
    arrived: (tag: string) => Deferred.await(gate(tag).arrived),
    release: (tag: string) => Deferred.succeed(gate(tag).open, undefined)
  }
}
