/**
 * `$SVC_HOME/svc.yaml`: today it holds the workflow runtime's environment, read under
 * `services.workflows.runtime.env` (spec: SVC_WORKFLOW_CAPACITY and SVC_WORKFLOW_LABELS are set
 * there). The process environment wins over the file, as it does for every variable.
 */
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import { parse } from "yaml"
import { suggest } from "../domain/manifest/internal/suggest.js"

export class ConfigFileError extends Error {}

/** Where svc reads its settings in svc.yaml. */
const SECTION = ["services", "workflows", "runtime", "env"] as const

/**
 * A key on the way to `services.workflows.runtime.env` misspelt (`workflow:`), where the right one
 * is missing: the settings under it were never read, and the defaults stood without a word. Other
 * keys are not judged (svc.yaml may hold other services' settings).
 */
const misspeltSection = (doc: unknown): string | undefined => {
  let at: unknown = doc
  for (let i = 0; i < SECTION.length; i++) {
    if (at === null || at === undefined) return undefined
    // A list or a word where a map belongs (`services: [...]`): nothing under it was read.
    if (typeof at !== "object" || Array.isArray(at)) return i === 0 ? undefined : `${SECTION.slice(0, i).join(".")} must be a map (svc reads its settings under ${SECTION.join(".")})`
    const here = at as Record<string, unknown>
    const expected = SECTION[i]!
    // There with a value: followed. Missing, or there with nothing (`workflows:`): a near key beside it is the one meant.
    if (here[expected] !== null && here[expected] !== undefined) {
      at = here[expected]
      continue
    }
    const near = Object.keys(here).find((k) => k !== expected && suggest(k, [expected]) === expected)
    const path = SECTION.slice(0, i)
    return near === undefined ? undefined : `${[...path, near].join(".")} is not read by svc; did you mean ${[...path, expected].join(".")}? (svc reads its settings under ${SECTION.join(".")})`
  }
  return undefined
}

/** The variables svc.yaml sets under `services.workflows.runtime.env` (none without the file); `misspelt`: a key on the way to them that is. */
const fileEnv = async (file: string): Promise<{ readonly vars: Record<string, string>; readonly misspelt?: string }> => {
  const text = await fs.readFile(file, "utf8").catch(() => undefined)
  const fromFile: Record<string, string> = {}
  let misspelt: string | undefined
  if (text !== undefined) {
    let doc: unknown
    try {
      doc = parse(text)
    } catch (e) {
      throw new ConfigFileError(`${file} is not valid YAML: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`)
    }
    // The file itself is a map (or empty): a list or a word at its top was taken as no settings.
    if (doc !== null && doc !== undefined && (typeof doc !== "object" || Array.isArray(doc))) {
      throw new ConfigFileError(`${file} must be a map (svc reads its settings under ${SECTION.join(".")}), not ${Array.isArray(doc) ? "a list" : `a ${typeof doc}`}`)
    }
    misspelt = misspeltSection(doc)
    const section = (doc as { services?: { workflows?: { runtime?: { env?: unknown } } } } | null)?.services?.workflows?.runtime?.env
    if (section !== undefined && section !== null) {
      if (typeof section !== "object" || Array.isArray(section)) throw new ConfigFileError(`${file}: services.workflows.runtime.env must be a map of variables`)
      // `KEY:` with nothing after it is unset, as an empty value is (it read as "null").
      for (const [k, v] of Object.entries(section)) {
        if (v === null || v === undefined) continue
        // A list or a map is no setting's value (`[8]` was read as "8", `{a: 9}` as "[object Object]").
        if (typeof v === "object") throw new ConfigFileError(`${file}: services.workflows.runtime.env.${k} must be a word or a number, not ${Array.isArray(v) ? "a list" : "a map"}`)
        fromFile[k] = String(v)
      }
    }
  }
  return misspelt === undefined ? { vars: fromFile } : { vars: fromFile, misspelt }
}

/**
 * The runtime's environment as `svc serve` reads it: svc.yaml's, then the process's over it; a
 * variable named like a setting that svc does not know is refused (a misspelt one).
 */
export const runtimeEnv = async (home: string, env: NodeJS.ProcessEnv = process.env): Promise<Record<string, string | undefined>> => {
  const file = nodePath.join(home, "svc.yaml")
  const { vars: fromFile, misspelt } = await fileEnv(file)
  if (misspelt !== undefined) throw new ConfigFileError(`${file}: ${misspelt}`)
  // An empty one (or blanks) is unset (`SVC_WORKFLOW_OUTPUT_LIMIT= svc serve`): it put the default in place of svc.yaml's value without a word.
  const fromEnv = Object.fromEntries(Object.entries(env).filter(([k, v]) => k.startsWith("SVC_WORKFLOW_") && isSet(v)))
  // A misspelt setting would leave its default in force without a word (SVC_WORKFLOW_CAPACTY: 3).
  for (const [name, where] of [...Object.keys(fromFile).map((k) => [k, `${file}: services.workflows.runtime.env`] as const), ...Object.keys(fromEnv).map((k) => [k, "the environment"] as const)]) {
    if (!name.startsWith("SVC_WORKFLOW_") || SETTINGS.includes(name)) continue
    const near = suggest(name, SETTINGS)
    throw new ConfigFileError(`${where} sets ${name}, which svc does not know${near === undefined ? "" : `; did you mean ${near}?`} (it knows ${SETTINGS.join(", ")})`)
  }
  return { ...fromFile, ...fromEnv }
}

/**
 * One setting, for a command that reads the runtime's settings without being it (`svc journal
 * replay` needs only SVC_WORKFLOW_RETAINED_RUNS): set in the environment, svc.yaml is not read;
 * otherwise svc.yaml's value, whatever else the file or the environment sets (settings this svc
 * does not know, in a home a newer svc or a worker wrote, are `svc serve`'s to refuse, not a
 * reader's). A file that cannot be read as svc.yaml is refused all the same: its value is unknown.
 */
export const settingFor = async (home: string, name: string, env: NodeJS.ProcessEnv = process.env): Promise<{ readonly value: string | undefined; readonly from: "environment" | "svc.yaml" | "default" }> => {
  const fromEnv = env[name]
  if (isSet(fromEnv)) return { value: fromEnv, from: "environment" }
  const value = (await fileEnv(nodePath.join(home, "svc.yaml"))).vars[name]
  return value === undefined ? { value: undefined, from: "default" } : { value, from: "svc.yaml" }
}

/** Whether an environment variable sets its setting: an empty one, or blanks, is unset. */
const isSet = (value: string | undefined): boolean => value !== undefined && value.trim() !== ""

/** The settings svc reads (docs/operations.md). */
export const SETTINGS: ReadonlyArray<string> = ["SVC_WORKFLOW_CAPACITY", "SVC_WORKFLOW_LABELS", "SVC_WORKFLOW_RETAINED_RUNS", "SVC_WORKFLOW_OUTPUT_LIMIT"]

/**
 * `message`, about one of the settings (it starts with its name), with where that setting was
 * set: the environment, or svc.yaml (the same text either way left the operator to guess).
 */
export const sayWhereSet = (home: string, message: string, env: NodeJS.ProcessEnv = process.env): string => {
  const name = SETTINGS.find((setting) => message.startsWith(setting))
  if (name === undefined) return message
  return `${message} (set in ${isSet(env[name]) ? "the environment" : `${nodePath.join(home, "svc.yaml")}: services.workflows.runtime.env`})`
}
