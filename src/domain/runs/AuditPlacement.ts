/**
 * `svc journal replay --audit`: a recorded placement decision is run again, from its recorded
 * inputs, through the current placement code; it is reproduced when the outcome, the host,
 * every candidate's verdict (exclusions with their codes, text and numbers, and scores) and the
 * selection provenance come out the same.
 */
import { canonicalJson } from "./Values.js"
import type { PlacementDecided } from "../journal/Events.js"
import { place, PLACEMENT_RULES, rulesOf } from "../placement/Placement.js"
import { selectionProvenance } from "./Decide.js"

export type PlacementAudit = { readonly reproduced: true } | { readonly reproduced: false; readonly differences: ReadonlyArray<string> }

const canonical = canonicalJson

export const auditPlacement = (e: PlacementDecided): PlacementAudit => {
  const again = place(e.activity, e.candidates, e.quotas)
  const host = again.outcome === "placed" ? again.host : null
  const differences: Array<string> = []
  // Made by rules this code does not have: judged by the latest it has, and not said reproduced.
  const rules = rulesOf(e.activity)
  if (rules > PLACEMENT_RULES) differences.push(`made by placement rules revision ${rules}, newer than this svc knows (${PLACEMENT_RULES}): judged by revision ${PLACEMENT_RULES}`)
  // A host by its id and, as the rest of the audit says it, its name.
  const names = new Map([...e.verdicts, ...again.verdicts].map((v) => [v.candidate, v.name] as const))
  const named = (id: string | null) => (id === null ? "none" : id === "owner" ? "owner" : `${id}${names.has(id) ? ` (${names.get(id)})` : ""}`)
  if (again.outcome !== e.outcome) differences.push(`outcome: recorded ${e.outcome}, now ${again.outcome}`)
  if (host !== e.host) differences.push(`host: recorded ${named(e.host)}, now ${named(host)}`)
  const recorded = new Map(e.verdicts.map((v) => [v.candidate, v]))
  for (const v of again.verdicts) {
    const before = recorded.get(v.candidate)
    if (before === undefined) differences.push(`candidate ${named(v.candidate)}: not in the recorded verdicts`)
    else if (canonical(before) !== canonical(v)) {
      const codes = (x: { readonly exclusions: ReadonlyArray<{ readonly code: string }> }) => x.exclusions.map((c) => c.code).join(",") || "none"
      // The same codes: what differs is said (it read "recorded exclusions X, now X").
      const texts = (x: { readonly exclusions: ReadonlyArray<{ readonly text: string }> }) => x.exclusions.map((c) => JSON.stringify(c.text)).join(", ")
      const same =
        codes(before) !== codes(v)
          ? ""
          : texts(before) !== texts(v)
            ? ` (recorded as ${texts(before)}, now ${texts(v)})`
            : canonical(before.score) !== canonical(v.score)
              ? ` (score recorded ${canonical(before.score)}, now ${canonical(v.score)})`
              : " (their numbers differ)"
      differences.push(`candidate ${named(v.candidate)}: recorded exclusions ${codes(before)}, now ${codes(v)}${same}`)
    }
    recorded.delete(v.candidate)
  }
  for (const c of recorded.keys()) differences.push(`candidate ${named(c)}: recorded, but not judged now`)
  const provenance = selectionProvenance(again)
  if (provenance !== e.record.selectionProvenance) differences.push(`selection provenance: recorded "${e.record.selectionProvenance}", now "${provenance}"`)
  return differences.length === 0 ? { reproduced: true } : { reproduced: false, differences }
}
