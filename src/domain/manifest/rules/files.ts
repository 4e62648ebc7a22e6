/**
 * Files and directories the manifest names must exist in the bag directory (issue: `svc bag
 * check` also checks job `main`, entries, `tools.ts` for overrides, `infra.root`, migrations).
 */
import { normalizeBagPath, type BagListing } from "../Environment.js"
import { isInsideBag } from "../Formats.js"
import { error, type KeyPath, type Problem } from "../Problem.js"
import { agentHooks, entriesOf, has, isMap, listOf, str } from "./internal.js"

export interface FileReference {
  readonly path: KeyPath
  readonly file: string
  readonly kind: "file" | "dir"
}

/** Every file or directory the manifest names, with where it is named. */
export const fileReferences = (raw: Record<string, unknown>): Array<FileReference> => {
  const refs: Array<FileReference> = []
  const add = (path: KeyPath, value: unknown, kind: "file" | "dir") => {
    if (typeof value === "string" && isInsideBag(value)) refs.push({ path, file: value, kind })
  }
  for (const [name, job] of entriesOf(raw["jobs"])) {
    if (!isMap(job) || !isMap(job["runs"])) continue
    if (job["runs"]["using"] === "node") add(["jobs", name, "runs", "main"], job["runs"]["main"], "file")
    add(["jobs", name, "runs", "working-directory"], job["runs"]["working-directory"], "dir")
  }
  for (const section of ["services", "scripts"]) {
    for (const [name, body] of entriesOf(raw[section])) {
      if (!isMap(body)) continue
      add([section, name, "entry"], body["entry"], "file")
      add([section, name, "working-directory"], body["working-directory"], "dir")
    }
  }
  for (const [name, schedule] of entriesOf(raw["schedules"])) if (isMap(schedule)) add(["schedules", name, "entry"], schedule["entry"], "file")
  if (isMap(raw["prompts"])) add(["prompts", "entry"], raw["prompts"]["entry"], "file")
  if (isMap(raw["slash-commands"])) add(["slash-commands", "entry"], raw["slash-commands"]["entry"], "file")
  if (typeof raw["dependencies"] === "string") add(["dependencies"], raw["dependencies"], "file")
  if (isMap(raw["store"])) add(["store", "migrations"], raw["store"]["migrations"], "dir")
  for (const [name, store] of entriesOf(raw["stores"])) if (isMap(store)) add(["stores", name, "migrations"], store["migrations"], "dir")
  for (const section of ["snapshots", "restores"]) {
    for (const [name, hook] of entriesOf(raw[section])) if (isMap(hook)) add([section, name, "entry"], hook["entry"], "file")
  }
  const hooks = raw["hooks"]
  const agent = agentHooks(hooks)
  agent?.list.forEach((h, i) => isMap(h) && add([...agent.path, i, "run"], h["run"], "file"))
  if (isMap(hooks)) listOf(hooks["barry"]).forEach((h, i) => isMap(h) && add(["hooks", "barry", i, "run"], h["run"], "file"))
  if (isMap(raw["infra"])) add(["infra", "root"], raw["infra"]["root"], "dir")
  return refs
}

const TOOLS_FILES = ["tools.ts", "src/tools.ts"]

/** Why a bag holding symbolic links cannot be installed: said where check can say it, so check and install agree. */
const SYMLINK = "is a symbolic link; a bag must be self-contained (svc bag install refuses it), so copy what it points to in instead"

export const fileRules = (raw: Record<string, unknown>, listing: BagListing): Array<Problem> => {
  const out: Array<Problem> = []
  const symlinks = listing.symlinks ?? new Set<string>()
  const named = new Set<string>()
  for (const ref of fileReferences(raw)) {
    const target = normalizeBagPath(ref.file)
    if (symlinks.has(target)) {
      named.add(target)
      out.push(error(ref.path, `${ref.file} ${SYMLINK}`))
      continue
    }
    // Reached through a link to a directory (not walked): said as that, not as a file missing.
    const through = [...symlinks].find((link) => target.startsWith(`${link}/`))
    if (through !== undefined) {
      named.add(through)
      out.push(error(ref.path, `${ref.file} is reached through ${through}, which ${SYMLINK}`))
      continue
    }
    const found = ref.kind === "file" ? listing.files.has(target) : listing.dirs.has(target)
    if (!found) {
      const other = ref.kind === "file" ? listing.dirs.has(target) : listing.files.has(target)
      out.push(
        error(ref.path, other ? `${ref.file} is a ${ref.kind === "file" ? "directory" : "file"}, not a ${ref.kind === "file" ? "file" : "directory"}` : `${ref.file} does not exist in the bag`)
      )
    }
  }
  // The others, which bag.yaml does not name, at its root.
  for (const link of [...symlinks].sort()) if (!named.has(link)) out.push(error([], `${link} ${SYMLINK}`))
  if (listOf(raw["tools"]).length > 0 && !TOOLS_FILES.some((f) => listing.files.has(f))) {
    out.push(error(["tools"], "overrides tools, but the bag has no tools.ts or src/tools.ts defining them"))
  }
  for (const [name, trait] of entriesOf(raw["traits"])) {
    if (!isMap(trait)) continue
    listOf(trait["skills"]).forEach((skill, i) => {
      if (typeof skill === "string" && !listing.dirs.has(`skills/${skill}`)) {
        out.push(error(["traits", name, "skills", i], `skills/${skill}/ does not exist in the bag`))
      }
    })
    listOf(trait["instructions"]).forEach((instruction, i) => {
      if (typeof instruction !== "string") return
      const prefix = `instructions/${instruction}.`
      if (![...listing.files].some((f) => f === `instructions/${instruction}` || (f.startsWith(prefix) && !f.slice(prefix.length).includes("/")))) {
        out.push(error(["traits", name, "instructions", i], `no file instructions/${instruction}(.md) exists in the bag`))
      }
    })
  }
  return out
}

/** Extensions may declare only a few keys (spec, "extends"); the rest belongs on the parent. */
export const extensionKeyProblems = (raw: Record<string, unknown>, allowed: ReadonlyArray<string>): Array<Problem> => {
  if (!has(raw, "extends")) return []
  const parent = str(raw["extends"]) ?? "the parent"
  return Object.keys(raw)
    .filter((k) => !allowed.includes(k))
    .map((k) => error([k], `an extension may not declare ${k}; declare it on the parent bag ${JSON.stringify(parent)}`, "key"))
}
