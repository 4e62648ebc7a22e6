/**
 * What the benches that run an owner in-process share: the stack `svc serve` wires for the
 * owner's runs (Owner.layerWithRuns with the Dispatcher, live projections, the checkpoint
 * schedule, node:crypto hashing and entropy, the child-process executor, run files under the
 * home), over the journal layer given; and the one job such an owner knows.
 */
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Checkpoints } from "../src/app/journal/Checkpoints.js"
import * as CheckpointSchedule from "../src/app/journal/CheckpointSchedule.js"
import type { Journal } from "../src/app/journal/Journal.js"
import { layer as projectionsLayer } from "../src/app/journal/Projections.js"
import { OwnerHost, type OwnerHostSettings } from "../src/app/runs/Dispatcher.js"
import { JobNotRunnable, type ResolvedJob } from "../src/app/runs/JobCatalog.js"
import { layerWithRuns, OwnerAddress } from "../src/app/workers/Owner.js"
import * as NodeHashing from "../src/infra/journal/NodeHashing.js"
import * as ChildExecutor from "../src/infra/runs/ChildExecutor.js"
import * as FileRunFiles from "../src/infra/runs/FileRunFiles.js"
import * as NodeEntropy from "../src/infra/workers/NodeEntropy.js"

/** The owner's layers on `home`, over `journal` (the Journal, and the Checkpoints of an SQLite one), with `host` as its OwnerHost and `address` as its own. */
export const benchOwner = <E>(home: string, journal: Layer.Layer<Journal | Checkpoints, E>, host: OwnerHostSettings, address: { readonly url: string; readonly fingerprint: string }) =>
  layerWithRuns.pipe(
    Layer.provideMerge(CheckpointSchedule.layer().pipe(Layer.provideMerge(projectionsLayer))),
    Layer.provideMerge(
      Layer.mergeAll(
        journal,
        NodeHashing.layer,
        NodeEntropy.layer,
        ChildExecutor.layer,
        FileRunFiles.layer(join(home, "runs")),
        Layer.succeed(OwnerHost, host),
        Layer.succeed(OwnerAddress, address)
      )
    )
  )

/** A node job only hosts with `label` may run (remote-eligible, no schemas), as JobCatalog would resolve it from a bag at `bagDir`. */
export const workerOnlyJob = (address: string, job: string, digest: string, label: string, bagDir: string): ResolvedJob => ({
  job: { address, bag: "bench", job, digest, executor: "node", remoteEligible: true, ownerOnly: [], requiredLabels: [label], requiredBins: [], bounds: [], timeoutMs: null },
  bagDir,
  runs: { using: "node", main: "main.mjs" },
  env: [],
  workingDirectory: undefined,
  secrets: [],
  preflight: undefined,
  validate: undefined,
  inputProblem: () => undefined,
  outputProblem: () => undefined
})

/**
 * The owner host of a bench that places its runs on workers: 4 slots, node and process, no
 * programs, `labels` (never the job's: the owner is not eligible), its jobs from `resolve`.
 */
export const benchHost = (resolve: OwnerHostSettings["resolve"], labels: ReadonlyArray<string> = ["arch=x64", "os=linux"]): OwnerHostSettings => ({
  capacity: 4,
  labels,
  capabilities: ["node", "process"],
  bins: () => Effect.succeed([]),
  resolve,
  withSlot: (effect) => effect
})

/** An OwnerHost's `resolve` that knows `job` alone. */
export const resolvingOnly = (job: ResolvedJob) => (address: string) =>
  address === job.job.address ? Effect.succeed(job) : Effect.fail(new JobNotRunnable({ message: `no bag holds ${address} here` }))
