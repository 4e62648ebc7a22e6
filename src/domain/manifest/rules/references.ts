/**
 * Rules about names that point at other parts of the manifest: trait includes (unknown names
 * and cycles), bounds, schedule jobs, duplicate vendors, models, roles and tools.
 */
import { error, type KeyPath, type Problem } from "../Problem.js"
import { JOB_REFERENCE } from "../schema/Schedules.js"
import { suggest } from "../internal/suggest.js"
import { entriesOf, has, isMap, listOf, quote, str } from "./internal.js"

/** `name` or `<bag>:name`: the local name when it points into this bag, else undefined. */
const ownName = (reference: string, bag: string | undefined): string | undefined => {
  const colon = reference.indexOf(":")
  if (colon < 0) return reference
  return reference.slice(0, colon) === bag ? reference.slice(colon + 1) : undefined
}

const unknownName = (what: string, name: string, known: ReadonlyArray<string>): string => {
  const hint = suggest(name, known)
  return `names ${what} ${quote(name)}, which this bag does not declare${hint === undefined ? "" : `; did you mean ${quote(hint)}?`}`
}

/**
 * The names in the list at `path` that point into this bag (bare, or as `<this bag>:<name>`) and
 * are not among its `known` traits or bounds; other bags' are resolved where those are installed.
 * An empty name is the schema's to refuse ("must not be empty"), said once.
 */
const undeclared = (list: unknown, path: KeyPath, what: "trait" | "bound", known: ReadonlyArray<string>, bag: string | undefined): Array<Problem> => {
  const out: Array<Problem> = []
  listOf(list).forEach((ref, i) => {
    const own = typeof ref === "string" && ref !== "" ? ownName(ref, bag) : undefined
    if (own !== undefined && !known.includes(own)) out.push(error([...path, i], unknownName(what, own, known)))
  })
  return out
}

export const traitRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  const bag = str(raw["name"])
  const traits = entriesOf(raw["traits"])
  const traitNames = traits.map(([k]) => k)
  const boundNames = entriesOf(raw["bounds"]).map(([k]) => k)
  const edges = new Map<string, Array<string>>()

  for (const [name, trait] of traits) {
    if (!isMap(trait)) continue
    const local: Array<string> = []
    listOf(trait["includes"]).forEach((ref, i) => {
      if (typeof ref !== "string") return
      const own = ownName(ref, bag)
      if (own === undefined) return // another bag's trait: resolved where that bag is installed
      if (!traitNames.includes(own)) out.push(error(["traits", name, "includes", i], unknownName("trait", own, traitNames)))
      else local.push(own)
    })
    edges.set(name, local)
    for (const [harness, ref] of entriesOf(trait["harnessTraits"])) {
      const own = typeof ref === "string" ? ownName(ref, bag) : undefined
      if (own !== undefined && !traitNames.includes(own)) {
        out.push(error(["traits", name, "harnessTraits", harness], unknownName("trait", own, traitNames)))
      }
    }
    out.push(...undeclared(trait["bounds"], ["traits", name, "bounds"], "bound", boundNames, bag))
  }

  // Cycles among this bag's traits, each reported once, at the first trait of the cycle.
  const state = new Map<string, "visiting" | "done">()
  const reported = new Set<string>()
  // Depth-first with an explicit stack, not recursion: a long include chain must not overflow the call stack.
  const visit = (root: string): void => {
    const stack: Array<string> = []
    const frames: Array<{ readonly name: string; readonly next: ReadonlyArray<string>; i: number }> = []
    const enter = (name: string) => {
      state.set(name, "visiting")
      stack.push(name)
      frames.push({ name, next: edges.get(name) ?? [], i: 0 })
    }
    enter(root)
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!
      if (frame.i >= frame.next.length) {
        frames.pop()
        stack.pop()
        state.set(frame.name, "done")
        continue
      }
      const next = frame.next[frame.i++]!
      if (state.get(next) === "visiting") {
        const cycle = [...stack.slice(stack.indexOf(next)), next]
        const key = [...new Set(cycle)].sort().join("\u0000")
        if (!reported.has(key)) {
          reported.add(key)
          out.push(error(["traits", next, "includes"], `trait includes form a cycle: ${cycle.join(" -> ")}`))
        }
      } else if (state.get(next) === undefined) enter(next)
    }
  }
  for (const name of edges.keys()) if (state.get(name) === undefined) visit(name)
  return out
}

/**
 * `bags`: a bag does not compose itself (in any form: the path form's circle is found at
 * install, this one is plain in the manifest), and a list names each bag once.
 */
export const compositionRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  const own = str(raw["name"])
  const bags = raw["bags"]
  if (Array.isArray(bags)) {
    const first = new Map<string, number>()
    bags.forEach((b, i) => {
      if (typeof b !== "string") return
      if (b === own) out.push(error(["bags", i], `names this bag itself (${quote(b)}): a bag cannot compose itself`))
      const seen = first.get(b)
      if (seen !== undefined) out.push(error(["bags", i], `names bag ${quote(b)} twice (first at bags[${seen}])`))
      else first.set(b, i)
    })
  } else if (isMap(bags) && own !== undefined && has(bags, own)) {
    out.push(error(["bags", own], `names this bag itself (${quote(own)}): a bag cannot compose itself`, "key"))
  }
  return out
}

/** Jobs: bounds exist; a bounded job is a single-file node job without preflight or validate. */
export const jobRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  const bag = str(raw["name"])
  const boundNames = entriesOf(raw["bounds"]).map(([k]) => k)
  for (const [name, job] of entriesOf(raw["jobs"])) {
    if (!isMap(job)) continue
    const path = ["jobs", name]
    const runs = isMap(job["runs"]) ? job["runs"] : undefined
    if (runs?.["using"] === "action") {
      for (const key of ["input_schema", "output_schema"]) {
        if (has(job, key)) out.push(error([...path, key], "is not allowed on an action job"))
      }
    }
    const bounds = listOf(job["bounds"])
    out.push(...undeclared(job["bounds"], [...path, "bounds"], "bound", boundNames, bag))
    if (bounds.length > 0) {
      if (runs !== undefined && runs["using"] !== "node") {
        out.push(error([...path, "runs", "using"], "a bounded job must use node"))
      }
      const main = str(runs?.["main"])
      if (runs?.["using"] === "node" && main !== undefined && !/\.m?js$/.test(main)) {
        out.push(error([...path, "runs", "main"], "a bounded job must run a single .js or .mjs file"))
      }
      for (const key of ["preflight", "validate"]) {
        if (has(job, key)) out.push(error([...path, key], "is not allowed on a bounded job"))
      }
    }
  }
  return out
}

/** A schedule's job: this bag's job must exist, and a pinned version must be the job's own. */
export const scheduleJobRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  const bag = str(raw["name"])
  const jobs = isMap(raw["jobs"]) ? raw["jobs"] : {}
  for (const [name, schedule] of entriesOf(raw["schedules"])) {
    const ref = isMap(schedule) ? str(schedule["job"]) : undefined
    const match = ref === undefined ? null : JOB_REFERENCE.exec(ref)
    if (match === null) continue
    const [, refBag, jobName, version] = match
    if (refBag !== undefined && refBag !== bag) continue
    const job = jobs[jobName!]
    const path = ["schedules", name, "job"]
    if (!isMap(job)) {
      out.push(error(path, unknownName("job", jobName!, Object.keys(jobs))))
      continue
    }
    if (version !== undefined) {
      const own = job["version"]
      if (own === undefined) out.push(error(path, `pins version ${version}, but job ${quote(jobName!)} declares no version`))
      else if (String(own) !== version) out.push(error(path, `pins version ${version}, but job ${quote(jobName!)} is version ${String(own)}`))
    }
  }
  return out
}

/**
 * A schedule's `traits` and `bounds` that point into this bag name traits and bounds it
 * declares (a trait may also be the bag's automatic one, named after the bag); another bag's
 * are resolved where that bag is installed, as a trait's or a job's are.
 */
export const scheduleGrantRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  const bag = str(raw["name"])
  const traitNames = entriesOf(raw["traits"]).map(([k]) => k)
  const boundNames = entriesOf(raw["bounds"]).map(([k]) => k)
  for (const [name, schedule] of entriesOf(raw["schedules"])) {
    if (!isMap(schedule)) continue
    // A schedule's trait may also be the bag's automatic one, named after the bag.
    out.push(...undeclared(schedule["traits"], ["schedules", name, "traits"], "trait", bag === undefined ? traitNames : [...traitNames, bag], bag))
    out.push(...undeclared(schedule["bounds"], ["schedules", name, "bounds"], "bound", boundNames, bag))
  }
  return out
}

export const vendorRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  const seenVendors = new Map<string, number>()
  listOf(raw["vendors"]).forEach((vendor, v) => {
    if (!isMap(vendor)) return
    const id = str(vendor["id"])
    if (id !== undefined) {
      const first = seenVendors.get(id)
      if (first !== undefined) out.push(error(["vendors", v, "id"], `vendor ${quote(id)} is listed twice (first at vendors[${first}])`))
      else seenVendors.set(id, v)
    }
    const seenModels = new Map<string, number>()
    const roles = new Map<string, number>()
    listOf(vendor["models"]).forEach((model, m) => {
      if (!isMap(model)) return
      const modelId = str(model["id"])
      if (modelId !== undefined) {
        const first = seenModels.get(modelId)
        if (first !== undefined) out.push(error(["vendors", v, "models", m, "id"], `model ${quote(modelId)} is listed twice in this vendor (first at models[${first}])`))
        else seenModels.set(modelId, m)
      }
      const kind = str(model["kind"])
      listOf(model["roles"]).forEach((role, r) => {
        if (typeof role !== "string" || kind === undefined) return
        const key = `${kind}\u0000${role}`
        const first = roles.get(key)
        if (first !== undefined) {
          out.push(error(["vendors", v, "models", m, "roles", r], `two ${kind} models claim the role ${role} (also models[${first}])`))
        } else roles.set(key, m)
      })
    })
  })
  return out
}

export const toolRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  const seen = new Map<string, number>()
  listOf(raw["tools"]).forEach((entry, i) => {
    if (!isMap(entry)) return
    for (const tool of Object.keys(entry)) {
      const first = seen.get(tool)
      if (first !== undefined) out.push(error(["tools", i, tool], `tool ${quote(tool)} is listed twice (first at tools[${first}])`, "key"))
      else seen.set(tool, i)
    }
  })
  return out
}
