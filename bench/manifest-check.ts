/**
 * bench/manifest-check: manifests checked per second over a corpus of generated manifests,
 * printed beside the rate of `yaml` parsing alone in the same run.
 *
 *   npx vite-node bench/manifest-check.ts [--manifests 500] [--passes 4] [--rounds 5] [--seed 1]
 *
 * Baseline: `YAML.parseDocument(text).toJS()` per manifest ("yaml parsing alone").
 * Measured: the whole check as `svc bag check` runs it: `parseManifest` (YAML with positions,
 * duplicate keys, alias limits), `checkManifest` (substitute constants, strict schema decode,
 * cross-key, reference, format and file rules) with the real format validators and a bag
 * listing, then each problem located to a line and column.
 * Target: check rate >= 0.5 x parse rate.
 *
 * The corpus is deterministic (seeded PRNG), mostly valid, some manifests with problems.
 */
import os from "node:os"
import { performance } from "node:perf_hooks"
import YAML from "yaml"
import { checkManifest } from "../src/domain/manifest/Check.js"
import { substituteConstants } from "../src/domain/manifest/Constants.js"
import type { BagListing } from "../src/domain/manifest/Environment.js"
import { formatPath } from "../src/domain/manifest/Problem.js"
import { formatValidators } from "../src/infra/manifest/FormatValidators.js"
import { parseManifest } from "../src/infra/manifest/YamlManifest.js"
import { prng } from "./prng.js"

const TARGET = 0.5

// ---------------------------------------------------------------------------------------------
// Options

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`)
  const value = i >= 0 ? Number(process.argv[i + 1]) : NaN
  return Number.isFinite(value) && value > 0 ? value : fallback
}
const MANIFESTS = arg("manifests", 500)
const PASSES = arg("passes", 4)
const ROUNDS = arg("rounds", 5)
const SEED = arg("seed", 1)

// ---------------------------------------------------------------------------------------------
// Deterministic corpus


interface Corpus {
  readonly texts: ReadonlyArray<string>
  readonly listings: ReadonlyArray<BagListing>
  readonly schemas: number
  readonly distinctSchemas: number
  readonly faulty: number
}

const WORDS = [
  "sync",
  "report",
  "index",
  "backup",
  "digest",
  "mail",
  "calendar",
  "notes",
  "photos",
  "ledger",
  "invoice",
  "crawl",
  "embed",
  "search",
  "summary",
  "cleanup",
  "export",
  "import",
  "archive",
  "metrics"
]
const SCHEMA_PROPS: ReadonlyArray<readonly [string, () => Record<string, unknown>]> = [
  ["query", () => ({ type: "string", minLength: 1 })],
  ["limit", () => ({ type: "integer", minimum: 1, maximum: 1000 })],
  ["since", () => ({ type: "string", format: "date-time" })],
  ["email", () => ({ type: "string", format: "email" })],
  ["url", () => ({ type: "string", format: "uri" })],
  ["dryRun", () => ({ type: "boolean" })],
  ["tags", () => ({ type: "array", items: { type: "string" }, uniqueItems: true })],
  ["mode", () => ({ type: "string", enum: ["fast", "full", "incremental"] })],
  ["ratio", () => ({ type: "number", minimum: 0, maximum: 1 })],
  ["path", () => ({ type: "string", pattern: "^[a-z0-9/._-]+$" })],
  ["retries", () => ({ type: "integer", minimum: 0 })],
  ["filters", () => ({ type: "object", properties: { from: { type: "string" }, to: { type: "string" } }, additionalProperties: false })],
  ["ids", () => ({ type: "array", items: { type: "integer" }, maxItems: 50 })],
  ["locale", () => ({ type: "string", enum: ["en", "fr", "de", "ja"] })],
  ["window", () => ({ type: "string", pattern: "^[0-9]+[smhd]$" })]
]
const EXAMPLE: Record<string, unknown> = {
  query: "inbox",
  limit: 10,
  since: "2026-01-01T00:00:00Z",
  email: "ops@example.com",
  url: "https://example.com/feed",
  dryRun: false,
  tags: ["a", "b"],
  mode: "fast",
  ratio: 0.5,
  path: "out/x",
  retries: 2,
  filters: { from: "a" },
  ids: [1, 2],
  locale: "en",
  window: "15m"
}
const CRONS = ["0 3 * * *", "*/15 * * * *", "30 8 * * 1-5", "0 0 1 * *", "5 4 * * sun", "0 */6 * * *", "0 9,17 * * *"]
const ZONES = ["UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo", "Australia/Sydney"]
const EVERY = ["1m", "5m", "15m", "30m", "1h", "1d"]

const generate = (count: number, seed: number): Corpus => {
  const rnd = prng(seed)
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1))
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(rnd() * xs.length)]!
  const chance = (p: number) => rnd() < p
  const texts: Array<string> = []
  const listings: Array<BagListing> = []
  const allSchemas: Array<string> = []
  let faulty = 0

  const schemaOf = (): { schema: Record<string, unknown>; example: Record<string, unknown> } => {
    const props: Record<string, unknown> = {}
    const example: Record<string, unknown> = {}
    const n = int(1, 6)
    for (let k = 0; k < n; k++) {
      const [name, make] = pick(SCHEMA_PROPS)
      props[name] = make()
      example[name] = EXAMPLE[name]
    }
    const names = Object.keys(props)
    const schema: Record<string, unknown> = { type: "object", properties: props }
    if (chance(0.6)) schema["required"] = names.filter(() => chance(0.5))
    if (chance(0.5)) schema["additionalProperties"] = false
    if (chance(0.2)) schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    if (chance(0.3)) schema["description"] = `Inputs of ${pick(WORDS)} ${int(1, 99)}`
    return { schema, example }
  }

  for (let m = 0; m < count; m++) {
    const name = `${pick(WORDS)}-${m}`
    const files = new Set<string>()
    const dirs = new Set<string>()
    const doc: Record<string, unknown> = { name, description: `The ${name} bag: ${pick(WORDS)} and ${pick(WORDS)}` }
    if (chance(0.4)) doc["version"] = `${int(0, 3)}.${int(0, 20)}.${int(0, 9)}`
    const size = pick([1, 1, 2, 2, 3, 5]) // most bags are small, a few large

    // constants, used by references below
    const constants: Record<string, unknown> = { deny: ["rm", "curl", "ssh"].slice(0, int(1, 3)), region: pick(["eu-west-1", "us-east-1"]) }
    if (chance(0.5)) constants["timeout"] = pick(["5m", "30m", "1h", 900])
    doc["constants"] = constants

    if (chance(0.3)) doc["bags"] = chance(0.5) ? [`${pick(WORDS)}-core`, `${pick(WORDS)}-ui`] : { [`${pick(WORDS)}-lib`]: { repo: `acme/${pick(WORDS)}`, ref: "main" } }
    if (chance(0.3)) doc["requires"] = { [`${pick(WORDS)}-svc`]: { reason: "calls its API", optional: chance(0.5) } }
    if (chance(0.3)) doc["dependencies"] = { ffmpeg: { reason: "transcodes", optional: true, install: { macos: "brew install ffmpeg" } } }

    // bounds
    const bounds: Record<string, unknown> = {}
    for (let b = 0; b < int(0, size); b++) {
      bounds[`bound-${b}`] = {
        description: `Restriction ${b}`,
        bound: { deniedTools: [`${pick(WORDS)}_write`], bash: { denyPrograms: { constant: "deny" } } }
      }
    }
    if (Object.keys(bounds).length > 0) doc["bounds"] = bounds
    const boundNames = Object.keys(bounds)

    // jobs
    const jobs: Record<string, Record<string, unknown>> = {}
    const jobInputs: Record<string, Record<string, unknown>> = {}
    for (let j = 0; j < int(0, 2 * size); j++) {
      const jobName = `${pick(WORDS)}-${j}`
      const kind = pick(["node", "node", "process", "action"])
      const job: Record<string, unknown> = { description: `Runs ${jobName}` }
      if (chance(0.3)) job["version"] = chance(0.5) ? `1.${j}.0` : j + 1
      if (kind === "node") {
        const main = `jobs/${jobName}.${chance(0.5) ? "js" : "ts"}`
        files.add(main)
        job["runs"] = { using: "node", main, secrets: chance(0.4) ? ["API_TOKEN"] : undefined, env: chance(0.3) ? ["LOG_LEVEL=info"] : undefined }
        if (main.endsWith(".js") && boundNames.length > 0 && chance(0.4)) job["bounds"] = [pick(boundNames)]
      } else if (kind === "process") {
        job["runs"] = { using: "process", command: [pick(["rsync", "python3", "make"]), "-v", `${jobName}`] }
      } else {
        job["runs"] = { using: "action", action: chance(0.5) ? `summarize-${j}` : `${pick(WORDS)}-agent:triage` }
      }
      if (kind !== "action") {
        if (chance(0.7)) {
          const { schema, example } = schemaOf()
          job["input_schema"] = schema
          jobInputs[jobName] = example
          allSchemas.push(JSON.stringify(schema))
        }
        if (chance(0.4)) {
          const { schema } = schemaOf()
          job["output_schema"] = schema
          allSchemas.push(JSON.stringify(schema))
        }
      }
      if (chance(0.3)) job["requires"] = { secrets: ["API_TOKEN"], labels: [`os=${pick(["macos", "linux"])}`] }
      if (chance(0.5)) job["timeout"] = chance(0.3) ? { constant: "timeout" in constants ? "timeout" : "region" } : pick(["90", "30s", "5m", "2h", 600])
      if (job["bounds"] === undefined && kind !== "action") {
        if (chance(0.2)) job["preflight"] = { command: `which ${pick(["rsync", "git"])}`, timeout: 30, hint: "install it" }
        if (chance(0.2)) {
          const out = `out/${jobName}.json`
          files.add(out)
          job["validate"] = { files_exist: [out], timeout: "10m" }
        }
      }
      if (typeof job["timeout"] === "object" && !("timeout" in constants)) delete job["timeout"]
      jobs[jobName] = JSON.parse(JSON.stringify(job)) as Record<string, unknown> // drop undefined
    }
    const jobNames = Object.keys(jobs)
    if (jobNames.length > 0) doc["jobs"] = jobs

    // schedules
    const schedules: Record<string, unknown> = {}
    for (let s = 0; s < int(0, size + 1); s++) {
      const schedule: Record<string, unknown> = { description: `Schedule ${s}` }
      const trigger = pick(["every", "cron", "cron", "at"])
      if (trigger === "every") schedule["every"] = pick(EVERY)
      if (trigger === "cron") schedule["cron"] = pick(CRONS)
      if (trigger === "at") schedule["at"] = chance(0.5) ? "login" : `2026-${String(int(1, 12)).padStart(2, "0")}-${String(int(1, 28)).padStart(2, "0")}T09:00:00+01:00`
      if (trigger !== "at" && chance(0.6)) schedule["timezone"] = pick(ZONES)
      const payload = jobNames.length > 0 && chance(0.6) ? "job" : pick(["action", "entry"])
      if (payload === "job") {
        const jobName = pick(jobNames)
        const version = jobs[jobName]!["version"]
        schedule["job"] = version !== undefined && chance(0.5) ? `${jobName}@${String(version)}` : jobName
        const inputs = jobInputs[jobName]
        if (inputs !== undefined && chance(0.7)) schedule["inputs"] = inputs
      } else if (payload === "action") {
        schedule["action"] = chance(0.7) ? `digest-${s}` : { description: "Inline", prompt: "Summarize today" }
        if (chance(0.3)) schedule["identity"] = "ops"
      } else {
        const entry = `scripts/schedule-${s}.mjs`
        files.add(entry)
        schedule["entry"] = entry
        if (chance(0.5)) schedule["args"] = ["--quiet"]
        if (chance(0.3)) schedule["timeout"] = "10m"
      }
      if (chance(0.3)) schedule["overlap"] = pick(["skip", "queue"])
      if (chance(0.2)) schedule["catch_up"] = pick(["none", "once"])
      if (chance(0.1)) schedule["enabled"] = false
      schedules[`${pick(WORDS)}-${s}`] = schedule
    }
    if (Object.keys(schedules).length > 0) doc["schedules"] = schedules

    // services and scripts
    for (const section of ["services", "scripts"] as const) {
      const out: Record<string, unknown> = {}
      for (let s = 0; s < int(0, Math.ceil(size / 2)); s++) {
        const body: Record<string, unknown> = { description: `${section} ${s}` }
        if (chance(0.6)) {
          const entry = `${section}/${pick(WORDS)}-${s}.ts`
          files.add(entry)
          body["entry"] = entry
        } else body["command"] = pick(["caddy", "redis-server", "node"])
        if (chance(0.4)) body["args"] = ["--port", "0"]
        if (chance(0.3)) body["env"] = ["MODE=prod", "REGION=eu"]
        if (chance(0.3)) body["secrets"] = ["DB_PASSWORD"]
        if (section === "services" && chance(0.5)) {
          body["serves"] = "http"
          body["health"] = "/healthz"
          if (chance(0.5)) body["local-only"] = true
        }
        out[`${pick(WORDS)}-${s}`] = body
      }
      if (Object.keys(out).length > 0) doc[section] = out
    }

    // traits: includes point at earlier traits only, so no cycle unless a fault adds one
    const traits: Record<string, Record<string, unknown>> = {}
    for (let t = 0; t < int(0, size + 1); t++) {
      const trait: Record<string, unknown> = { description: `Grant ${t}`, access: pick(["read", "readwrite"]) }
      const earlier = Object.keys(traits)
      if (earlier.length > 0 && chance(0.6)) trait["includes"] = [pick(earlier)]
      if (boundNames.length > 0 && chance(0.4)) trait["bounds"] = [pick(boundNames)]
      if (chance(0.3)) {
        const skill = `${pick(WORDS)}-skill`
        dirs.add(`skills/${skill}`)
        trait["skills"] = [skill]
      }
      if (chance(0.3)) {
        const instruction = `${pick(WORDS)}-${t}`
        files.add(`instructions/${instruction}.md`)
        trait["instructions"] = [instruction]
      }
      traits[`trait-${t}`] = trait
    }
    if (Object.keys(traits).length > 0) doc["traits"] = traits

    // vendors
    if (chance(0.25)) {
      doc["vendors"] = Array.from({ length: int(1, 2) }, (_, v) => ({
        id: `vendor-${v}`,
        label: `Vendor ${v}`,
        baseUrl: chance(0.5) ? `https://api.vendor${v}.example/v1` : { env: `VENDOR${v}_URL`, fallback: `https://vendor${v}.example` },
        credential: chance(0.8) ? { env: `VENDOR${v}_API_KEY` } : null,
        models: [
          { id: "large", label: "Large", kind: "completion", roles: ["default"] },
          { id: "small", label: "Small", kind: "completion", roles: ["small"], structuredOutput: "native" },
          { id: "embed", label: "Embed", kind: "embedding", dimensions: 1024, roles: ["default"] }
        ].slice(0, int(1, 3))
      }))
    }

    // stores
    if (chance(0.3)) {
      dirs.add("migrations/main")
      doc["stores"] = { main: { owned_by: pick(["identity", "node"]), engine: "sqlite", migrations: "migrations/main" } }
      if (chance(0.3)) {
        files.add("snapshots/main.mjs")
        doc["snapshots"] = { main: { entry: "snapshots/main.mjs" } }
      }
    }
    if (chance(0.2)) {
      files.add("hooks/guard.sh")
      doc["hooks"] = { agent: [{ event: "pre-tool", run: "hooks/guard.sh", matcher: "Bash", timeout: 10 }] }
    }
    if (chance(0.15)) doc["mcp-servers"] = { [`${pick(WORDS)}-mcp`]: { command: "npx", args: ["-y", "server"], env: ["MCP_TOKEN"] } }

    // ~15% of the corpus carries a mistake a person makes
    if (chance(0.15)) {
      faulty++
      switch (int(0, 7)) {
        case 0:
          doc["descripton"] = "typo"
          break
        case 1:
          doc["schedules"] = { ...((doc["schedules"] as object | undefined) ?? {}), broken: { cron: "61 * * * *", entry: "x.js" } }
          break
        case 2:
          doc["schedules"] = { ...((doc["schedules"] as object | undefined) ?? {}), odd: { every: "2m", action: "x" } }
          break
        case 3:
          doc["services"] = { ...((doc["services"] as object | undefined) ?? {}), both: { description: "d", entry: "gone.js", command: "x" } }
          break
        case 4:
          doc["traits"] = { ...traits, loop: { description: "l", includes: ["loop", "nope"] } }
          break
        case 5:
          doc["jobs"] = { ...jobs, Bad_Name: { runs: { using: "node" } } }
          break
        case 6:
          doc["store"] = { owned_by: "identity", engine: "postgres", migrations: "/abs" }
          break
        default:
          doc["schedules"] = { ...((doc["schedules"] as object | undefined) ?? {}), orphan: { every: "1h", job: "no-such-job", timezone: "Mars/Base" } }
      }
    }

    const style = rnd()
    texts.push(YAML.stringify(doc, style < 0.15 ? { collectionStyle: "flow", lineWidth: 0 } : { lineWidth: 100 }))
    const allDirs = new Set<string>([""])
    for (const d of dirs) allDirs.add(d)
    for (const f of files) {
      const parts = f.split("/")
      for (let i = 1; i < parts.length; i++) allDirs.add(parts.slice(0, i).join("/"))
    }
    listings.push({ files, dirs: allDirs })
  }
  return { texts, listings, schemas: allSchemas.length, distinctSchemas: new Set(allSchemas).size, faulty }
}

// ---------------------------------------------------------------------------------------------
// The two workloads

let sink = 0

const parseOnly = (texts: ReadonlyArray<string>): void => {
  for (const text of texts) {
    const value = YAML.parseDocument(text).toJS() as unknown
    if (value !== null && typeof value === "object") sink++
  }
}

const fullCheck = (texts: ReadonlyArray<string>, listings: ReadonlyArray<BagListing>): void => {
  for (let i = 0; i < texts.length; i++) {
    const parsed = parseManifest(texts[i]!)
    if (parsed.problems.length > 0) {
      sink += parsed.problems.length
      continue
    }
    const result = checkManifest(parsed.value, { validators: formatValidators, listing: listings[i]! })
    for (const p of result.problems) {
      const at = parsed.locate(p.path, p.at)
      sink += at.line + formatPath(p.path).length
    }
    if (result.manifest !== undefined) sink++
  }
}

const timed = (run: () => void): number => {
  const started = performance.now()
  run()
  return performance.now() - started
}

const median = (xs: ReadonlyArray<number>): number => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const gc = (): void => (globalThis as { gc?: () => void }).gc?.()

const fmt = (n: number): string => Math.round(n).toLocaleString("en-US")

// ---------------------------------------------------------------------------------------------
// Phases of the check, timed apart, to see where the time goes

const phases = (texts: ReadonlyArray<string>, listings: ReadonlyArray<BagListing>): ReadonlyArray<readonly [string, number]> => {
  const parsed = texts.map((t) => parseManifest(t))
  const values = parsed.map((p) => p.value)
  const yamlMs = timed(() => texts.forEach((t) => parseManifest(t)))
  const substituteMs = timed(() => values.forEach((v) => v !== null && typeof v === "object" && substituteConstants(v as Record<string, unknown>)))
  const checkNoFilesMs = timed(() => values.forEach((v) => checkManifest(v, { validators: formatValidators })))
  const checkMs = timed(() => values.forEach((v, i) => checkManifest(v, { validators: formatValidators, listing: listings[i]! })))
  const results = values.map((v, i) => checkManifest(v, { validators: formatValidators, listing: listings[i]! }))
  const locateMs = timed(() => results.forEach((r, i) => r.problems.forEach((p) => parsed[i]!.locate(p.path, p.at))))
  const plainMs = timed(() => parseOnly(texts))
  return [
    ["yaml parseDocument + toJS (baseline)", plainMs],
    ["parseManifest (yaml with positions, uniqueKeys, strict)", yamlMs],
    ["substituteConstants", substituteMs],
    ["checkManifest without listing", checkNoFilesMs],
    ["checkManifest with listing", checkMs],
    ["locate problems", locateMs]
  ]
}

// ---------------------------------------------------------------------------------------------

const main = (): void => {
  const cpus = os.cpus()
  const generatedAt = performance.now()
  const corpus = generate(MANIFESTS, SEED)
  const generateMs = performance.now() - generatedAt
  const bytes = corpus.texts.reduce((n, t) => n + Buffer.byteLength(t), 0)
  const lines = corpus.texts.reduce((n, t) => n + t.split("\n").length, 0)

  console.log("bench/manifest-check")
  console.log(`  date        ${new Date().toISOString()}`)
  console.log(`  node        ${process.version} (${process.platform}/${process.arch})`)
  console.log(`  cpu         ${cpus[0]?.model ?? "unknown"} x ${cpus.length}`)
  console.log(
    `  corpus      ${corpus.texts.length} manifests (seed ${SEED}), ${(bytes / 1024).toFixed(0)} KiB, ${fmt(lines)} lines, ` +
      `avg ${(bytes / corpus.texts.length / 1024).toFixed(1)} KiB; generated in ${fmt(generateMs)} ms`
  )

  // Cold pass: each distinct JSON Schema is compiled by ajv once, then cached by content.
  const coldMs = timed(() => fullCheck(corpus.texts, corpus.listings))
  let valid = 0
  let problems = 0
  for (let i = 0; i < corpus.texts.length; i++) {
    const parsed = parseManifest(corpus.texts[i]!)
    const result = parsed.problems.length > 0 ? undefined : checkManifest(parsed.value, { validators: formatValidators, listing: corpus.listings[i]! })
    if (result?.manifest !== undefined) valid++
    problems += parsed.problems.length + (result?.problems.length ?? 0)
  }
  console.log(
    `  verdicts    ${valid} valid, ${corpus.texts.length - valid} with errors (${corpus.faulty} seeded with a mistake), ${problems} problems in all`
  )
  console.log(
    `  schemas     ${corpus.schemas} JSON Schemas (input/output), ${corpus.distinctSchemas} distinct; ajv compiles each distinct one once ` +
      `(cached by content), so the timed passes below run with a warm cache`
  )
  console.log(`  cold pass   ${fmt((corpus.texts.length / coldMs) * 1000)} manifests/s (first check pass, includes ajv compiles)`)

  // Warm-up, then rounds of interleaved passes; the order flips each round.
  for (let w = 0; w < 2; w++) {
    parseOnly(corpus.texts)
    fullCheck(corpus.texts, corpus.listings)
  }
  const n = corpus.texts.length * PASSES
  const parseRates: Array<number> = []
  const checkRates: Array<number> = []
  console.log(`\n  ${ROUNDS} rounds x ${PASSES} passes x ${corpus.texts.length} manifests each (global.gc ${typeof (globalThis as { gc?: unknown }).gc === "function" ? "on" : "off"})`)
  console.log("  round   parse (manifests/s)   check (manifests/s)   check/parse")
  for (let r = 0; r < ROUNDS; r++) {
    const runParse = () => {
      gc()
      parseRates.push((n / timed(() => Array.from({ length: PASSES }, () => parseOnly(corpus.texts)))) * 1000)
    }
    const runCheck = () => {
      gc()
      checkRates.push((n / timed(() => Array.from({ length: PASSES }, () => fullCheck(corpus.texts, corpus.listings)))) * 1000)
    }
    if (r % 2 === 0) {
      runParse()
      runCheck()
    } else {
      runCheck()
      runParse()
    }
    const p = parseRates[r]!
    const c = checkRates[r]!
    console.log(`  ${String(r + 1).padEnd(7)} ${fmt(p).padStart(19)}   ${fmt(c).padStart(19)}   ${(c / p).toFixed(2).padStart(11)}`)
  }
  const parseRate = median(parseRates)
  const checkRate = median(checkRates)
  const ratio = checkRate / parseRate
  const pairedRatio = median(checkRates.map((c, i) => c / parseRates[i]!))
  console.log(`  median  ${fmt(parseRate).padStart(19)}   ${fmt(checkRate).padStart(19)}   ${ratio.toFixed(2).padStart(11)}`)
  console.log(`  (median of the per-round ratios: ${pairedRatio.toFixed(2)})`)

  console.log("\n  phases (one pass over the corpus, warm)")
  for (const [label, ms] of phases(corpus.texts, corpus.listings)) {
    console.log(`    ${label.padEnd(58)} ${ms.toFixed(1).padStart(8)} ms  ${fmt((corpus.texts.length / ms) * 1000).padStart(8)} /s`)
  }

  console.log(
    `\n  result: check ${fmt(checkRate)} manifests/s = ${ratio.toFixed(2)} x yaml parsing alone (${fmt(parseRate)}/s); ` +
      `target >= ${TARGET} x: ${ratio >= TARGET ? "PASS" : "FAIL"}`
  )
  if (sink === -1) console.log("unreachable")
  process.exitCode = ratio >= TARGET ? 0 : 1
}

main()
