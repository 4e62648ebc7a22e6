/**
 * `$SVC_HOME/svc.yaml`: today it holds the workflow runtime's environment, read under
 * `services.workflows.runtime.env` (spec: SVC_WORKFLOW_CAPACITY and SVC_WORKFLOW_LABELS are set
 * there). The process environment wins over the file, as it does for every variable.
 */
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import { parse } from "yaml"

export class ConfigFileError extends Error {}

export const runtimeEnv = async (home: string, env: NodeJS.ProcessEnv = process.env): Promise<Record<string, string | undefined>> => {
  const file = nodePath.join(home, "svc.yaml")
  const text = await fs.readFile(file, "utf8").catch(() => undefined)
  const fromFile: Record<string, string> = {}
  if (text !== undefined) {
    let doc: unknown
    try {
      doc = parse(text)
    } catch (e) {
      throw new ConfigFileError(`${file} is not valid YAML: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`)
    }
    const section = (doc as { services?: { workflows?: { runtime?: { env?: unknown } } } } | null)?.services?.workflows?.runtime?.env
    if (section !== undefined && section !== null) {
      if (typeof section !== "object" || Array.isArray(section)) throw new ConfigFileError(`${file}: services.workflows.runtime.env must be a map of variables`)
      for (const [k, v] of Object.entries(section)) fromFile[k] = String(v)
    }
  }
  return { ...fromFile, ...Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith("SVC_WORKFLOW_"))) }
}
