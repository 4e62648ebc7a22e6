/** Rules whose formats well-kept libraries judge: cron, IANA zones, JSON Schema (see Environment). */
import type { FormatValidators } from "../Environment.js"
import { error, type Problem } from "../Problem.js"
import { JOB_REFERENCE } from "../schema/Schedules.js"
import { entriesOf, isMap, str } from "./internal.js"

export const formatRules = (raw: Record<string, unknown>, v: FormatValidators): Array<Problem> => {
  const out: Array<Problem> = []
  const bag = str(raw["name"])
  const validSchemas = new Map<string, unknown>()

  for (const [name, job] of entriesOf(raw["jobs"])) {
    if (!isMap(job)) continue
    for (const key of ["input_schema", "output_schema"]) {
      const schema = job[key]
      if (!isMap(schema)) continue
      const problems = v.jsonSchema(schema)
      // At the key that is wrong when the validator says which, so that bag.yaml's line points at it.
      for (const why of problems) out.push(error(["jobs", name, key, ...why.path], why.path.length === 0 ? `is not a valid JSON Schema: ${why.message}` : `${why.message} (JSON Schema)`))
      if (problems.length === 0 && key === "input_schema") validSchemas.set(name, schema)
    }
  }

  for (const [name, schedule] of entriesOf(raw["schedules"])) {
    if (!isMap(schedule)) continue
    const cron = str(schedule["cron"])
    // An empty cron is the schema's to report ("must not be empty"), once.
    if (cron !== undefined && cron.trim().length > 0) {
      const fields = cron.trim().split(/\s+/)
      if (fields.length !== 5) {
        out.push(error(["schedules", name, "cron"], `must be a five-field cron expression (minute hour day month weekday), found ${fields.length} field${fields.length === 1 ? "" : "s"}`))
      } else {
        const why = v.cron(cron)
        if (why !== undefined) out.push(error(["schedules", name, "cron"], `is not a valid cron expression: ${why}`))
      }
    }
    const zone = str(schedule["timezone"])
    if (zone !== undefined && !v.isTimeZone(zone)) {
      out.push(error(["schedules", name, "timezone"], `${JSON.stringify(zone)} is not an IANA time zone (such as UTC or Europe/Paris)`))
    }
    // A job schedule's inputs must satisfy the job's input_schema, checked now rather than at 3 a.m.
    const ref = str(schedule["job"])
    const match = ref === undefined ? null : JOB_REFERENCE.exec(ref)
    if (match !== null && isMap(schedule["inputs"]) && (match[1] === undefined || match[1] === bag)) {
      const schema = validSchemas.get(match[2]!)
      if (schema !== undefined) {
        const why = v.validate(schema, schedule["inputs"])
        if (why !== undefined) out.push(error(["schedules", name, "inputs"], `do not match the input_schema of job ${JSON.stringify(match[2])}: ${why}`))
      }
    }
  }
  return out
}
