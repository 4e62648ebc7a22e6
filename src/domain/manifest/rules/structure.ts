/**
 * Rules that tie several keys of one object together: exactly-one choices, keys that need or
 * exclude others (spec, bag-manifest.md, per-table rules and the Errors table).
 */
import { error, type KeyPath, type Problem } from "../Problem.js"
import { agentHooks, entriesOf, has, isMap, listOf, quote, str } from "./internal.js"

const exactlyOne = (obj: unknown, path: KeyPath, keys: ReadonlyArray<string>, what: string): Array<Problem> => {
  if (!isMap(obj)) return []
  const present = keys.filter((k) => has(obj, k))
  if (present.length === 1) return []
  if (present.length === 0) return [error(path, `needs exactly one ${what}: ${keys.join(", ")}; none is set`)]
  return [error(path, `needs exactly one ${what}: ${keys.join(", ")}; found ${present.join(" and ")}`)]
}

/** Services and scripts: exactly one of `entry` or `command`. */
export const processRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  for (const section of ["services", "scripts"] as const) {
    for (const [name, body] of entriesOf(raw[section])) {
      out.push(...exactlyOne(body, [section, name], ["entry", "command"], "way to start it"))
      if (section === "services" && isMap(body)) {
        const reachable = has(body, "serves") || has(body, "socket")
        for (const key of ["health", "local-only"]) {
          if (has(body, key) && !reachable) out.push(error([section, name, key], "needs serves or socket on the same service"))
        }
      }
    }
  }
  return out
}

export const TRIGGERS = ["every", "cron", "at"] as const
export const PAYLOADS = ["job", "action", "entry"] as const

/** Schedules: one trigger, one payload; entry-only keys; keys that belong to one trigger or payload. */
export const scheduleStructure = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  for (const [name, body] of entriesOf(raw["schedules"])) {
    if (!isMap(body)) continue
    const path = ["schedules", name]
    out.push(...exactlyOne(body, path, TRIGGERS, "trigger"))
    out.push(...exactlyOne(body, path, PAYLOADS, "payload"))
    if (!has(body, "entry")) {
      for (const key of ["args", "env", "secrets", "timeout"]) {
        if (has(body, key)) out.push(error([...path, key], "is only for a schedule that runs an entry script"))
      }
    }
    if (has(body, "timezone") && !has(body, "every") && !has(body, "cron")) {
      out.push(error([...path, "timezone"], "applies only to every or cron (an at time carries its own offset)"))
    }
    if (has(body, "identity") && !has(body, "action")) out.push(error([...path, "identity"], "applies only to an action payload"))
    if (has(body, "inputs") && !has(body, "action") && !has(body, "job")) {
      out.push(error([...path, "inputs"], "applies only to an action or job payload"))
    }
  }
  return out
}

/** `bags` map entries: `repo` xor `path`; `rev`, `ref`, `subdir` need `repo`; `rev` conflicts with `ref`. */
export const bagSourceRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  for (const [name, entry] of entriesOf(raw["bags"])) {
    if (!isMap(entry)) continue
    const path = ["bags", name]
    const repo = has(entry, "repo")
    const local = has(entry, "path")
    if (repo && local) out.push(error(path, "sets both repo and path; choose exactly one"))
    if (!repo && !local) out.push(error(path, "needs exactly one of repo or path (leave the entry empty to compose without a source)"))
    for (const key of ["rev", "ref", "subdir"]) {
      if (has(entry, key) && !repo) {
        out.push(error([...path, key], local ? "conflicts with path; it needs repo" : "needs repo"))
      }
    }
    if (has(entry, "rev") && has(entry, "ref")) out.push(error([...path, "ref"], "conflicts with rev: pin an exact commit or track a ref, not both"))
  }
  return out
}

export const storeRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  if (has(raw, "store") && has(raw, "stores")) out.push(error(["stores"], "cannot be declared together with store; move the single store under stores"))
  const declared = new Set<string>([...(has(raw, "store") ? ["default"] : []), ...entriesOf(raw["stores"]).map(([k]) => k)])
  for (const section of ["snapshots", "restores"]) {
    for (const [name] of entriesOf(raw[section])) {
      if (!declared.has(name)) {
        const known = declared.size === 0 ? "no store is declared" : `declared: ${[...declared].join(", ")}`
        out.push(error([section, name], `names no declared store (${known}; a single store is named default)`, "key"))
      }
    }
  }
  return out
}

export const permissionRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  listOf(raw["permissions"]).forEach((p, i) => {
    if (!isMap(p)) return
    if (p["kind"] === "automation" && !has(p, "app")) out.push(error(["permissions", i], "automation needs app: the app that receives Apple events"))
    if (p["kind"] !== "automation" && typeof p["kind"] === "string" && has(p, "app")) {
      out.push(error(["permissions", i, "app"], "applies only to kind automation"))
    }
  })
  return out
}

export const mcpRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  for (const [name, server] of entriesOf(raw["mcp-servers"])) {
    if (!isMap(server)) continue
    if (!has(server, "url") && !has(server, "command")) out.push(error(["mcp-servers", name], "declares neither url nor command"))
    if (has(server, "type") && !has(server, "url")) out.push(error(["mcp-servers", name, "type"], "is the transport of a url server; set url"))
  }
  return out
}

export const appRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  for (const [name, app] of entriesOf(raw["apps"])) {
    if (!isMap(app)) continue
    if (has(app, "capabilities") && !has(app, "protocol-version")) {
      out.push(error(["apps", name, "capabilities"], "needs protocol-version"))
    }
    const platform = str(app["platform"])
    for (const block of ["macos", "ios"]) {
      if (has(app, block) && platform !== undefined && platform !== block && (platform === "macos" || platform === "ios")) {
        out.push(error(["apps", name, block], `does not apply to a ${platform} app`))
      }
    }
  }
  return out
}

export const hookRules = (raw: Record<string, unknown>): Array<Problem> => {
  const hooks = raw["hooks"]
  const agent = agentHooks(hooks)
  if (agent === undefined) return []
  const out: Array<Problem> = []
  agent.list.forEach((hook, i) => {
    if (isMap(hook) && has(hook, "matcher") && hook["event"] !== "pre-tool" && hook["event"] !== "post-tool" && typeof hook["event"] === "string") {
      out.push(error([...agent.path, i, "matcher"], "applies only to pre-tool and post-tool hooks"))
    }
  })
  return out
}

export const providesRules = (raw: Record<string, unknown>): Array<Problem> => {
  const provides = raw["provides"]
  if (!isMap(provides) || has(provides, "local") || has(provides, "tunnel")) return []
  return [error(["provides"], "names neither local nor tunnel")]
}

export const dependencyRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  for (const [name, pkg] of entriesOf(raw["dependencies"])) {
    if (isMap(pkg) && name.includes("/") && !has(pkg, "bin")) {
      out.push(error(["dependencies", name], `package ${quote(name)} contains "/", so it needs bin: the executable to look up`))
    }
  }
  return out
}

export const validateRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  for (const [name, job] of entriesOf(raw["jobs"])) {
    if (isMap(job) && isMap(job["validate"]) && !has(job["validate"], "files_exist") && !has(job["validate"], "command")) {
      out.push(error(["jobs", name, "validate"], "checks nothing: set files_exist, command or both"))
    }
  }
  return out
}
