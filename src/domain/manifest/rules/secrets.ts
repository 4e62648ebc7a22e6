/**
 * No svc secret's shape anywhere in a manifest. A bag is copied to every machine that installs it
 * and shipped as it is; its names, job versions, labels and programs are advertised by the workers
 * that hold it and journaled with every run of its jobs, where a worker's advertisement holding one
 * is refused by the owner (the worker could no longer advertise at all). A job takes a secret from
 * the secrets of the host that runs it instead.
 */
import { holdsSecret } from "../../workers/Secrets.js"
import { isMap } from "../internal/schemaKit.js"
import { error, type PathSegment, type Problem } from "../Problem.js"

export const SECRET_IN_MANIFEST =
  'holds what is shaped as an svc secret (svc_wk_…, svc_jt_…, svc_jk_…): a bag is copied as it is to every machine that installs it, and its names, versions and labels are advertised and journaled; a job takes a secret from $SVC_HOME/secrets on the host that runs it (docs/executors.md, "Secrets")'

/** Every string value, and every key, of `raw` holding a secret's shape: one problem each, at its place, in the document's order. */
export const secretRules = (raw: Record<string, unknown>): Array<Problem> => {
  const out: Array<Problem> = []
  // A stack of its own, in the document's order: a document may nest deep.
  const stack: Array<{ readonly value: unknown; readonly path: ReadonlyArray<PathSegment>; readonly key?: string }> = [{ value: raw, path: [] }]
  while (stack.length > 0) {
    const { key, path, value } = stack.pop()!
    if (key !== undefined && holdsSecret(key)) {
      out.push(error(path, SECRET_IN_MANIFEST, "key"))
      continue
    }
    if (typeof value === "string") {
      if (holdsSecret(value)) out.push(error(path, SECRET_IN_MANIFEST))
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], path: [...path, i] })
    } else if (isMap(value)) {
      const entries = Object.entries(value)
      for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i]![1], path: [...path, entries[i]![0]], key: entries[i]![0] })
    }
  }
  return out
}
