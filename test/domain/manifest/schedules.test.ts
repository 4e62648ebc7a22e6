/** schedules (spec: "schedules" table; one trigger, one payload; entry-only keys; defaults). */
import { describe, expect, it } from "vitest"
import { listing } from "../../support/manifest.js"
import { doc, fails, valid, type Row } from "./cases.js"

const rejects = (rows: ReadonlyArray<Row>) =>
  it.each(rows)("rejects $name", ({ yaml, path, line, message }) => {
    fails(yaml, { path, line, message })
  })

/** A schedule `nightly` with the given keys, one per line: the first is line 5. */
const schedule = (...lines: ReadonlyArray<string>) => doc("schedules:", "  nightly:", ...lines.map((l) => `    ${l}`))

/** The same, with a job `report` declared after it (so a job payload resolves). */
const withJob = (...lines: ReadonlyArray<string>) =>
  schedule(...lines) + "jobs:\n  report:\n    version: 2\n    runs: {using: process, command: [report]}\n"

describe("schedules", () => {
  it("fills the defaults: timezone UTC, overlap skip, catch_up once, enabled true", () => {
    expect(valid(schedule("every: 5m", "action: tidy")).schedules?.["nightly"]).toEqual({
      every: "5m",
      action: "tidy",
      timezone: "UTC",
      overlap: "skip",
      catch_up: "once",
      enabled: true
    })
  })

  it("keeps explicit values over the defaults", () => {
    expect(
      valid(schedule("cron: '0 9 * * 1-5'", "timezone: Europe/Paris", "action: tidy", "overlap: queue", "catch_up: none", "enabled: false")).schedules?.["nightly"]
    ).toMatchObject({ timezone: "Europe/Paris", overlap: "queue", catch_up: "none", enabled: false })
  })

  it("accepts every key of an action schedule and of an entry schedule", () => {
    valid(
      doc(
        "traits:",
        "  reader: {description: reads mail}",
        "bounds:",
        "  strict: {description: no tools, bound: {deniedTools: [x]}}",
        "schedules:",
        "  triage:",
        "    description: morning triage",
        "    every: 1h",
        "    action: 'mail:triage'",
        "    identity: ops",
        "    inputs: {folder: inbox}",
        "    traits: [reader]",
        "    bounds: [strict]",
        "  sweep:",
        "    at: login",
        "    entry: scripts/sweep.js",
        "    args: [--all]",
        "    env: [MODE=full]",
        "    secrets: [TOKEN]",
        "    timeout: 10m",
        "  inline:",
        "    at: '2026-12-01T09:00:00+01:00'",
        "    action: {description: say hi, prompt: Say hi to the team}"
      )
    )
  })

  it.each(["1m", "5m", "15m", "30m", "1h", "1d"])("accepts every: %s", (every) => {
    valid(schedule(`every: ${every}`, "action: tidy"))
  })

  it.each([["2m"], ["10m"], ["1w"], ["60"], ["1h30m"], ["5M"]])("refuses every: %s", (every) => {
    fails(schedule(`every: ${every}`, "action: tidy"), { path: "schedules.nightly.every", line: 5, message: "must be one of 1m, 5m, 15m, 30m, 1h, 1d" })
  })

  it.each(["daily", "nightly-2", "a1"])("accepts the kebab-case name %s", (name) => {
    valid(doc("schedules:", `  ${name}: {every: 1d, action: tidy}`))
  })

  it.each([
    ["Nightly", "schedules.Nightly"],
    ["night_ly", "schedules.night_ly"],
    ["night--ly", "schedules.night--ly"],
    ["nightly-", "schedules.nightly-"]
  ])("refuses the name %j", (name, path) => {
    fails(doc("schedules:", `  ${name}: {every: 1d, action: tidy}`), { path, line: 4, message: "is not a valid name: use kebab-case" })
  })
})

describe("triggers and payloads", () => {
  rejects([
    { name: "no trigger", yaml: schedule("action: tidy"), path: "schedules.nightly", line: 5, message: "needs exactly one trigger: every, cron, at; none is set" },
    { name: "two triggers", yaml: schedule("every: 1h", "cron: '0 * * * *'", "action: tidy"), path: "schedules.nightly", line: 5, message: "needs exactly one trigger: every, cron, at; found every and cron" },
    { name: "no payload", yaml: schedule("every: 1h"), path: "schedules.nightly", line: 5, message: "needs exactly one payload: job, action, entry; none is set" },
    { name: "two payloads", yaml: withJob("every: 1h", "job: report", "action: tidy"), path: "schedules.nightly", line: 5, message: "needs exactly one payload: job, action, entry; found job and action" }
  ])

  it("reports a missing trigger and a missing payload separately", () => {
    fails(schedule("description: nothing"), [
      { path: "schedules.nightly", line: 5, message: "exactly one trigger" },
      { path: "schedules.nightly", line: 5, message: "exactly one payload" }
    ])
  })

  it("reports all three triggers and all three payloads", () => {
    fails(withJob("every: 1h", "cron: '0 * * * *'", "at: login", "job: report", "action: tidy", "entry: s.js"), [
      { path: "schedules.nightly", line: 5, message: "found every and cron and at" },
      { path: "schedules.nightly", line: 5, message: "found job and action and entry" }
    ])
  })

  it.each([
    ["args", "args: [x]"],
    ["env", "env: [A=1]"],
    ["secrets", "secrets: [TOKEN]"],
    ["timeout", "timeout: 30s"]
  ])("refuses %s without an entry payload", (key, line) => {
    fails(schedule("every: 1h", "action: tidy", line), { path: `schedules.nightly.${key}`, line: 7, message: "is only for a schedule that runs an entry script" })
  })

  it("refuses all four on a job schedule, one message each", () => {
    fails(withJob("every: 1h", "job: report", "args: [x]", "env: [A=1]", "secrets: [T]", "timeout: 5"), [
      { path: "schedules.nightly.args", line: 7, message: "only for a schedule that runs an entry" },
      { path: "schedules.nightly.env", line: 8, message: "only for a schedule that runs an entry" },
      { path: "schedules.nightly.secrets", line: 9, message: "only for a schedule that runs an entry" },
      { path: "schedules.nightly.timeout", line: 10, message: "only for a schedule that runs an entry" }
    ])
  })

  rejects([
    { name: "identity on a job schedule", yaml: withJob("every: 1h", "job: report", "identity: ops"), path: "schedules.nightly.identity", line: 7, message: "applies only to an action payload" },
    { name: "inputs on an entry schedule", yaml: schedule("every: 1h", "entry: s.js", "inputs: {a: 1}"), path: "schedules.nightly.inputs", line: 7, message: "applies only to an action or job payload" },
    { name: "a timeout that is not a duration", yaml: schedule("every: 1h", "entry: s.js", "timeout: soon"), path: "schedules.nightly.timeout", line: 7, message: "must be a duration" },
    { name: "a timeout of no time at all", yaml: schedule("every: 1h", "entry: s.js", "timeout: 0"), path: "schedules.nightly.timeout", line: 7, message: "must be more than 0 seconds (0 is no time at all)" },
    { name: "an env item that is not KEY=VALUE", yaml: schedule("every: 1h", "entry: s.js", "env: [MODE]"), path: "schedules.nightly.env[0]", line: 7, message: "must be a KEY=VALUE literal" },
    { name: "an entry outside the bag", yaml: schedule("every: 1h", "entry: /usr/bin/true"), path: "schedules.nightly.entry", line: 6, message: "must be a relative path inside the bag" }
  ])
})

describe("cron, timezone and at", () => {
  it.each(["0 9 * * 1-5", "*/15 * * * *", "30 2 1 * *", "0 0 * * SUN", "5 4 * JAN,JUL *"])("accepts cron %j", (cron) => {
    valid(schedule(`cron: '${cron}'`, "action: tidy"))
  })

  it.each([
    ["* * * *", "found 4 fields"],
    ["0 0 * * * *", "found 6 fields"],
    ["@daily", "found 1 field"],
    ["99 * * * *", "is not a valid cron expression"],
    ["0 25 * * *", "is not a valid cron expression"],
    ["a b c d e", "is not a valid cron expression"]
  ])("refuses cron %j", (cron, message) => {
    fails(schedule(`cron: '${cron}'`, "action: tidy"), { path: "schedules.nightly.cron", line: 5, message })
  })

  it("names the five fields when the count is wrong", () => {
    fails(schedule("cron: '* * *'", "action: tidy"), { path: "schedules.nightly.cron", line: 5, message: "must be a five-field cron expression (minute hour day month weekday)" })
  })

  it.each(["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "America/Argentina/Buenos_Aires"])("accepts the IANA zone %s", (zone) => {
    valid(schedule("every: 1d", `timezone: ${zone}`, "action: tidy"))
  })

  it.each(["Mars/Base", "CEST+2", "Europe/", "../etc/passwd", "Paris"])("refuses the zone %j", (zone) => {
    fails(schedule("every: 1d", `timezone: '${zone}'`, "action: tidy"), { path: "schedules.nightly.timezone", line: 6, message: "is not an IANA time zone" })
  })

  it("refuses a timezone on an at schedule (the time carries its offset)", () => {
    fails(schedule("at: '2026-12-01T09:00:00Z'", "timezone: Europe/Paris", "action: tidy"), { path: "schedules.nightly.timezone", line: 6, message: "applies only to every or cron" })
  })

  it.each(["login", "2026-12-01T09:00:00+01:00", "2026-12-01T09:00:00Z", "2026-12-01T09:00Z", "2026-12-01T09:00:00.250-05:30", "2028-02-29T00:00:00Z"])(
    "accepts at: %s",
    (at) => {
      valid(schedule(`at: '${at}'`, "action: tidy"))
    }
  )

  it.each([
    ["2026-12-01T09:00:00", "must be login or an ISO 8601 time with an offset"],
    ["2026-12-01", "must be login or an ISO 8601 time with an offset"],
    ["2026-12-01 09:00:00+01:00", "must be login or an ISO 8601 time with an offset"],
    ["tomorrow", "must be login or an ISO 8601 time with an offset"],
    ["Login", "must be login or an ISO 8601 time with an offset"],
    // Well formed, but no such moment: said as such, not as a format.
    ["2026-02-30T09:00:00Z", "is a day that does not exist: 2026-02 has 28 days"],
    ["2027-02-29T00:00:00Z", "is a day that does not exist: 2027-02 has 28 days"],
    ["2026-13-01T00:00:00Z", "has month 13: there are 12"],
    ["2026-12-01T24:00:00Z", "has no such time of day: 24:00:00"],
    ["2026-12-01T09:00:00+25:00", "has an offset that does not exist: +25:00"]
  ])("refuses at: %s", (at, message) => {
    fails(schedule(`at: '${at}'`, "action: tidy"), { path: "schedules.nightly.at", line: 5, message })
  })

  it("accepts an unquoted ISO time with an offset (YAML 1.2 reads it as a string)", () => {
    expect(valid(schedule("at: 2026-12-01T09:00:00+01:00", "action: tidy")).schedules?.["nightly"]?.at).toBe("2026-12-01T09:00:00+01:00")
  })

  it("refuses an at written as a YAML timestamp-looking plain scalar without offset", () => {
    fails(schedule("at: 2026-12-01T09:00:00", "action: tidy"), { path: "schedules.nightly.at", line: 5, message: "with an offset" })
  })
})

describe("payload references", () => {
  it.each(["report", "report@2", "demo:report@2", "other:report", "other:report@7"])("accepts job: %s", (ref) => {
    valid(withJob("every: 1h", `job: '${ref}'`))
  })

  rejects([
    { name: "an unknown job of this bag", yaml: withJob("every: 1h", "job: reprot"), path: "schedules.nightly.job", line: 6, message: 'names job "reprot", which this bag does not declare; did you mean "report"?' },
    { name: "a pin to another version", yaml: withJob("every: 1h", "job: report@3"), path: "schedules.nightly.job", line: 6, message: 'pins version 3, but job "report" is version 2' },
    { name: "a pin on a job without version", yaml: doc("jobs:", "  plain: {runs: {using: process, command: [x]}}", "schedules:", "  nightly: {every: 1h, job: plain@1}"), path: "schedules.nightly.job", line: 6, message: 'pins version 1, but job "plain" declares no version' },
    { name: "a malformed job reference", yaml: withJob("every: 1h", "job: 'Report Job'"), path: "schedules.nightly.job", line: 6, message: "must name a job" },
    { name: "a malformed action name", yaml: schedule("every: 1h", "action: 'do it'"), path: "schedules.nightly.action", line: 6, message: "must name an action" },
    { name: "an action that is a list", yaml: schedule("every: 1h", "action: [a]"), path: "schedules.nightly.action", line: 6, message: "an action name or an inline action" }
  ])

  it("checks inputs against the job's input_schema", () => {
    const text = (inputs: string) =>
      doc("jobs:", "  report:", "    runs: {using: process, command: [r]}", "    input_schema: {type: object, required: [day], properties: {day: {type: string}}}", "schedules:", `  nightly: {every: 1d, job: report, inputs: ${inputs}}`)
    valid(text("{day: monday}"))
    fails(text("{day: 5}"), { path: "schedules.nightly.inputs", line: 8, message: 'do not match the input_schema of job "report"' })
  })
})

describe("schedule values", () => {
  rejects([
    { name: "an unknown overlap", yaml: schedule("every: 1h", "action: t", "overlap: parallel"), path: "schedules.nightly.overlap", line: 7, message: "must be one of skip, queue" },
    { name: "an unknown catch_up", yaml: schedule("every: 1h", "action: t", "catch_up: all"), path: "schedules.nightly.catch_up", line: 7, message: "must be one of none, once" },
    { name: "enabled as a string", yaml: schedule("every: 1h", "action: t", "enabled: 'no'"), path: "schedules.nightly.enabled", line: 7, message: "must be true or false" },
    { name: "traits as a string", yaml: schedule("every: 1h", "action: t", "traits: reader"), path: "schedules.nightly.traits", line: 7, message: "must be a list" },
    { name: "inputs as a list", yaml: schedule("every: 1h", "action: t", "inputs: [a]"), path: "schedules.nightly.inputs", line: 7, message: "a map of inputs" },
    { name: "an empty cron, once", yaml: schedule("cron: ''", "action: t"), path: "schedules.nightly.cron", line: 5, message: "must not be empty" },
    { name: "a blank cron, once", yaml: schedule("cron: '   '", "action: t"), path: "schedules.nightly.cron", line: 5, message: "must not be empty" },
    { name: "an unknown key", yaml: schedule("every: 1h", "action: t", "retries: 2"), path: "schedules.nightly.retries", line: 7, message: 'unknown key "retries"' },
    { name: "a schedule that is not a map", yaml: doc("schedules:", "  nightly: every day"), path: "schedules.nightly", line: 4, message: "must be a map" }
  ])

  it("checks the entry script against the listing", () => {
    const text = schedule("every: 1h", "entry: scripts/tick.js")
    valid(text, listing(["scripts/tick.js"]))
    fails(text, { path: "schedules.nightly.entry", line: 6, message: "scripts/tick.js does not exist in the bag" }, { listing: listing([]) })
  })
})
