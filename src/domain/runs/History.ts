/**
 * A run's story as its journal stream tells it (`svc journal history RUN`): every event in
 * order, each placement decision with every candidate's verdict and whether the current
 * placement code reproduces it from its recorded inputs (AuditPlacement.ts). What an auditor
 * reads to see why the run went where it went, and why it moved. Pure: the events are given.
 */
import type { Envelope, PlacementDecided } from "../journal/Events.js"
import { hostWords, rulesOf, sharedNames } from "../placement/Placement.js"
import { auditPlacement } from "./AuditPlacement.js"

export interface HistoryDecision {
  readonly outcome: PlacementDecided["outcome"]
  /** The host chosen (id), when placed. */
  readonly host: string | null
  readonly attempt: number | null
  readonly selection: string
  /**
   * Every candidate, in the recorded order: what excluded it, or its score, in words (`verdict`)
   * and as recorded (`exclusions`: layer, code, text and, for capacity, the numbers).
   */
  readonly verdicts: ReadonlyArray<{ readonly candidate: string; readonly name: string; readonly verdict: string; readonly exclusions: PlacementDecided["verdicts"][number]["exclusions"] }>
  readonly notes: ReadonlyArray<string>
  /** The revision of the placement rules it was made by, and judged again by (docs/placement.md, "Rules revisions"). */
  readonly rules: number
  /** Re-run through the current placement code from its recorded inputs. */
  readonly reproduced: boolean
  readonly differences: ReadonlyArray<string>
}

export interface HistoryEntry {
  readonly sequence: number
  readonly at: number
  readonly type: string
  /** One line, as a person reads it. */
  readonly text: string
  /** For a placement decision: its details. */
  readonly decision?: HistoryDecision
}


/** A candidate's verdict in words: its exclusions with their layer, or that it was eligible, with its score. */
const verdictText = (v: PlacementDecided["verdicts"][number]): string => {
  if (v.exclusions.length === 0) return v.score === null ? "eligible" : `eligible; score: locality ${v.score.locality}, preference ${v.score.preference}`
  // Each layer named once, before its exclusions, as a run's explanation does: "eligibility: revoked; lacks label gpu=true".
  const parts: Array<string> = []
  let layer: string | undefined
  for (const x of v.exclusions) {
    parts.push(x.layer === layer ? x.text : `${x.layer}: ${x.text}`)
    layer = x.layer
  }
  return `excluded (${parts.join("; ")})`
}

/** The run's entries, from the envelopes of its stream in order. */
export const historyOf = (envelopes: ReadonlyArray<Envelope>): ReadonlyArray<HistoryEntry> => {
  // Host ids as the decisions named them, so that events say 'lab-1', not its id; two identities
  // of one name anywhere in the story (a machine that joined again) are said with the id from its
  // first line, not only from the decision that brought the second in.
  const names = new Map<string, string>([["owner", "owner"]])
  for (const { event: e } of envelopes) if (e._tag === "PlacementDecided") for (const v of e.verdicts) names.set(v.candidate, v.name)
  const known = [...names]
  const shared = sharedNames(known.length, (i) => known[i]![0], (i) => known[i]![1])
  const host = (id: string) => {
    const name = names.get(id) ?? id
    return hostWords(id, name, shared?.has(name) === true)
  }
  let decisions = 0
  const entries: Array<HistoryEntry> = []
  for (const { sequence, event: e } of envelopes) {
    const entry = (text: string, decision?: HistoryDecision) =>
      entries.push({ sequence, at: "at" in e ? e.at : 0, type: e._tag, text, ...(decision === undefined ? {} : { decision }) })
    switch (e._tag) {
      case "RunSubmitted":
        entry(`submitted by ${e.actor}: ${e.job.address} (digest ${e.job.digest})${e.preferredLabels.length === 0 ? "" : `, preferring ${e.preferredLabels.join(", ")}`}`)
        break
      case "PlacementDecided": {
        decisions++
        const verdicts = e.verdicts.map((v) => ({ candidate: v.candidate, name: v.name, verdict: verdictText(v), exclusions: v.exclusions }))
        const audit = auditPlacement(e)
        const head = e.outcome === "placed" && e.host !== null ? `placed on ${host(e.host)}${e.attempt === null ? "" : ` as attempt ${e.attempt}`}` : e.outcome
        entry(`decision ${decisions}: ${head}`, {
          outcome: e.outcome,
          host: e.host,
          attempt: e.attempt,
          selection: e.record.selectionProvenance,
          verdicts,
          notes: e.notes,
          rules: rulesOf(e.activity),
          reproduced: audit.reproduced,
          differences: audit.reproduced ? [] : audit.differences
        })
        break
      }
      case "AttemptStarted":
        entry(`attempt ${e.attempt} started on ${host(e.host)}${e.fence === null ? "" : ` (its session fence ${e.fence})`}`)
        break
      case "AttemptDeclined":
        entry(`attempt ${e.attempt} declined by ${host(e.host)}: ${e.reason}`)
        break
      case "AttemptReported":
        entry(`attempt ${e.attempt} reported by ${host(e.host)}: ${e.ok ? "succeeded" : `failed: ${e.error ?? "no reason given"}`}${e.exitCode === null ? "" : ` (exit code ${e.exitCode})`}`)
        break
      case "AttemptSuperseded":
        entry(`attempt ${e.attempt} on ${host(e.host)} superseded: ${e.reason}`)
        break
      case "AttemptCeased":
        entry(`attempt ${e.attempt} on ${host(e.host)} ceased: ${e.reason}`)
        break
      case "RunStopRequested":
        entry(`stop requested by ${e.actor}`)
        break
      default:
        entry(e._tag)
    }
  }
  return entries
}
