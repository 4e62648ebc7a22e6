/** traits, bounds, credentials, permissions, tools (spec: the key tables of each). */
import { describe, expect, it } from "vitest"
import { check, listing } from "../../support/manifest.js"
import { doc, fails, valid, type Row } from "./cases.js"

const rejects = (rows: ReadonlyArray<Row>) =>
  it.each(rows)("rejects $name", ({ yaml, path, line, message }) => {
    fails(yaml, { path, line, message })
  })

describe("traits", () => {
  it("accepts every key and defaults access to read", () => {
    const m = valid(
      doc(
        "bounds:",
        "  no-net: {description: no network, bound: {deniedTools: [fetch]}}",
        "traits:",
        "  base:",
        "    description: basic reading",
        "  full:",
        "    description: everything",
        "    access: readwrite",
        "    includes: [base, 'demo:base', 'other:reader']",
        "    harnessTraits: {claude: base, codex: 'other:x'}",
        "    nativeTools: {claude: [Bash, Read]}",
        "    bags: [demo, mail]",
        "    namespaces: [legacy]",
        "    skills: [triage]",
        "    instructions: [style]",
        "    bounds: [no-net, 'other:strict']",
        "    bound:",
        "      deniedTools: [rm]",
        "      bash: {denyPrograms: [curl], allowNetwork: false}",
        "      paths: {deny: [/etc]}"
      )
    )
    expect(m.traits?.["base"]).toEqual({ description: "basic reading", access: "read" })
    expect(m.traits?.["full"]?.access).toBe("readwrite")
    expect(m.traits?.["full"]?.bound).toMatchObject({ deniedTools: ["rm"], paths: { deny: ["/etc"] } })
  })

  it("accepts access write and reads it as readwrite (spec)", () => {
    expect(valid(doc("traits:", "  t: {description: d, access: write}")).traits?.["t"]?.access).toBe("readwrite")
  })

  rejects([
    { name: "a trait without description", yaml: doc("traits:", "  t: {access: read}"), path: "traits.t.description", line: 4, message: "is required" },
    { name: "an unknown access", yaml: doc("traits:", "  t: {description: d, access: admin}"), path: "traits.t.access", line: 4, message: "must be one of read, readwrite, write" },
    { name: "includes as a string", yaml: doc("traits:", "  t: {description: d, includes: base}"), path: "traits.t.includes", line: 4, message: "must be a list" },
    { name: "an include of an unknown trait", yaml: doc("traits:", "  base: {description: d}", "  t: {description: d, includes: [bas]}"), path: "traits.t.includes[0]", line: 5, message: 'names trait "bas", which this bag does not declare; did you mean "base"?' },
    { name: "an own-qualified include of an unknown trait", yaml: doc("traits:", "  t: {description: d, includes: ['demo:nope']}"), path: "traits.t.includes[0]", line: 4, message: 'names trait "nope"' },
    { name: "a harnessTraits entry naming an unknown trait", yaml: doc("traits:", "  t: {description: d, harnessTraits: {claude: nope}}"), path: "traits.t.harnessTraits.claude", line: 4, message: 'names trait "nope"' },
    { name: "harnessTraits as a list", yaml: doc("traits:", "  t: {description: d, harnessTraits: [a]}"), path: "traits.t.harnessTraits", line: 4, message: "must be a map" },
    { name: "nativeTools with a string value", yaml: doc("traits:", "  t: {description: d, nativeTools: {claude: Bash}}"), path: "traits.t.nativeTools.claude", line: 4, message: "must be a list" },
    { name: "bags as a string", yaml: doc("traits:", "  t: {description: d, bags: demo}"), path: "traits.t.bags", line: 4, message: "must be a list" },
    { name: "an empty skill name", yaml: doc("traits:", "  t: {description: d, skills: ['']}"), path: "traits.t.skills[0]", line: 4, message: "must not be empty" },
    { name: "a bound name this bag does not declare", yaml: doc("traits:", "  t: {description: d, bounds: [strict]}"), path: "traits.t.bounds[0]", line: 4, message: 'names bound "strict"' },
    { name: "an inline bound with deniedTools not a list", yaml: doc("traits:", "  t:", "    description: d", "    bound: {deniedTools: rm}"), path: "traits.t.bound.deniedTools", line: 6, message: "must be a list" },
    { name: "an inline bound with denyPrograms not a list", yaml: doc("traits:", "  t:", "    description: d", "    bound: {bash: {denyPrograms: curl}}"), path: "traits.t.bound.bash.denyPrograms", line: 6, message: "must be a list" },
    { name: "an unknown trait key", yaml: doc("traits:", "  t:", "    description: d", "    acess: read"), path: "traits.t.acess", line: 6, message: 'unknown key "acess"; did you mean "access"?' },
    { name: "a trait name with a colon", yaml: doc("traits:", "  'a:b': {description: d}"), path: 'traits["a:b"]', line: 4, message: "is not a valid name: a name may not contain a colon or spaces" },
    { name: "a trait that is not a map", yaml: doc("traits:", "  t: reader"), path: "traits.t", line: 4, message: "must be a map" }
  ])

  it("refuses a trait including itself", () => {
    fails(doc("traits:", "  t: {description: d, includes: [t]}"), { path: "traits.t.includes", line: 4, message: "trait includes form a cycle: t -> t" })
  })

  it("refuses a cycle through several traits, reported once", () => {
    fails(
      doc("traits:", "  a: {description: d, includes: [b]}", "  b: {description: d, includes: [c]}", "  c: {description: d, includes: [a]}"),
      { path: "traits.a.includes", line: 4, message: "trait includes form a cycle: a -> b -> c -> a" }
    )
  })

  it("refuses an unknown name and a cycle in the same traits, each once", () => {
    fails(doc("traits:", "  u: {description: d, includes: [v]}", "  v: {description: d, includes: [u, nope]}"), [
      { path: "traits.u.includes", line: 4, message: "cycle: u -> v -> u" },
      { path: "traits.v.includes[1]", line: 5, message: 'names trait "nope"' }
    ])
  })

  it("accepts a diamond of includes (shared, not cyclic)", () => {
    valid(
      doc(
        "traits:",
        "  base: {description: d}",
        "  left: {description: d, includes: [base]}",
        "  right: {description: d, includes: [base]}",
        "  top: {description: d, includes: [left, right]}"
      )
    )
  })

  it("leaves another bag's traits to that bag", () => {
    valid(doc("traits:", "  t: {description: d, includes: ['mail:reader', 'mail:t']}"))
  })

  it("handles a long chain of includes without overflowing", () => {
    const lines = ["traits:"]
    for (let i = 0; i < 5000; i++) lines.push(`  t${i}: {description: d, includes: [t${i + 1}]}`)
    lines.push("  t5000: {description: d, includes: [t0]}")
    const r = check(doc(...lines))
    expect(r.errors).toHaveLength(1)
    expect(r.errors[0]!.message).toContain("trait includes form a cycle")
  })

  it("checks skills and instructions against the bag listing", () => {
    const text = doc("traits:", "  t:", "    description: d", "    skills: [triage]", "    instructions: [style]")
    valid(text, listing(["skills/triage/SKILL.md", "instructions/style.md"]))
    fails(
      text,
      [
        { path: "traits.t.skills[0]", line: 6, message: "skills/triage/ does not exist in the bag" },
        { path: "traits.t.instructions[0]", line: 7, message: "no file instructions/style(.md) exists in the bag" }
      ],
      { listing: listing([]) }
    )
  })
})

describe("bounds", () => {
  it("accepts a bound with the shown keys and open extra keys", () => {
    const m = valid(
      doc(
        "bounds:",
        "  strict:",
        "    description: no shell damage",
        "    bound:",
        "      deniedTools: [delete]",
        "      bash: {denyPrograms: [rm, dd]}",
        "      network: {deny: true}"
      )
    )
    expect(m.bounds?.["strict"]?.bound).toEqual({ deniedTools: ["delete"], bash: { denyPrograms: ["rm", "dd"] }, network: { deny: true } })
  })

  rejects([
    { name: "a bound without description", yaml: doc("bounds:", "  b: {bound: {}}"), path: "bounds.b.description", line: 4, message: "is required" },
    { name: "a bound without bound", yaml: doc("bounds:", "  b: {description: d}"), path: "bounds.b.bound", line: 4, message: "is required" },
    { name: "bound as a list", yaml: doc("bounds:", "  b: {description: d, bound: [rm]}"), path: "bounds.b.bound", line: 4, message: "must be a map" },
    { name: "denyPrograms with a number", yaml: doc("bounds:", "  b: {description: d, bound: {bash: {denyPrograms: [rm, 5]}}}"), path: "bounds.b.bound.bash.denyPrograms[1]", line: 4, message: "must be a string" },
    { name: "an unknown key beside bound", yaml: doc("bounds:", "  b: {description: d, bound: {}, tools: [x]}"), path: "bounds.b.tools", line: 4, message: 'unknown key "tools"' },
    { name: "a bound name with a space", yaml: doc("bounds:", "  'no net': {description: d, bound: {}}"), path: 'bounds["no net"]', line: 4, message: "is not a valid name" }
  ])
})

describe("credentials", () => {
  it("accepts vault credentials with each field", () => {
    const m = valid(
      doc(
        "credentials:",
        "  API_KEY: {source: vault, item: Demo API, field: password}",
        "  USER_2: {source: vault, item: Demo, field: username}",
        "  _NOTES: {source: vault, item: Demo, field: notes}",
        "  URL: {source: vault, item: Demo, field: uri}"
      )
    )
    expect(Object.keys(m.credentials ?? {})).toEqual(["API_KEY", "USER_2", "_NOTES", "URL"])
  })

  rejects([
    { name: "a lower-case variable name", yaml: doc("credentials:", "  api_key: {source: vault, item: i, field: password}"), path: "credentials.api_key", line: 4, message: "an environment variable name uses capitals, digits and underscores" },
    { name: "a variable name starting with a digit", yaml: doc("credentials:", "  2KEY: {source: vault, item: i, field: password}"), path: "credentials.2KEY", line: 4, message: "is not a valid name" },
    { name: "a source other than vault", yaml: doc("credentials:", "  KEY: {source: env, item: i, field: password}"), path: "credentials.KEY.source", line: 4, message: "must be one of vault" },
    { name: "an unknown field", yaml: doc("credentials:", "  KEY: {source: vault, item: i, field: secret}"), path: "credentials.KEY.field", line: 4, message: "must be one of username, password, notes, uri" },
    { name: "a missing item", yaml: doc("credentials:", "  KEY: {source: vault, field: password}"), path: "credentials.KEY.item", line: 4, message: "is required" },
    { name: "a missing source", yaml: doc("credentials:", "  KEY: {item: i, field: password}"), path: "credentials.KEY.source", line: 4, message: "is required" },
    { name: "a missing field", yaml: doc("credentials:", "  KEY: {source: vault, item: i}"), path: "credentials.KEY.field", line: 4, message: "is required" },
    { name: "a value in the manifest", yaml: doc("credentials:", "  KEY: {source: vault, item: i, field: password, value: hunter2}"), path: "credentials.KEY.value", line: 4, message: 'unknown key "value"' }
  ])
})

describe("permissions", () => {
  it("accepts each kind, automation with its app", () => {
    const m = valid(
      doc(
        "permissions:",
        "  - {kind: automation, app: Mail, reason: sends mail}",
        "  - {kind: accessibility, reason: clicks}",
        "  - {kind: screen-recording, reason: sees}",
        "  - {kind: full-disk-access, reason: reads}"
      )
    )
    expect(m.permissions?.map((p) => p.kind)).toEqual(["automation", "accessibility", "screen-recording", "full-disk-access"])
  })

  rejects([
    { name: "an unknown kind", yaml: doc("permissions:", "  - {kind: camera, reason: r}"), path: "permissions[0].kind", line: 4, message: "must be one of automation, accessibility, screen-recording, full-disk-access" },
    { name: "automation without app", yaml: doc("permissions:", "  - {kind: accessibility, reason: r}", "  - {kind: automation, reason: r}"), path: "permissions[1]", line: 5, message: "automation needs app" },
    { name: "app on another kind", yaml: doc("permissions:", "  - kind: accessibility", "    app: Mail", "    reason: r"), path: "permissions[0].app", line: 5, message: "applies only to kind automation" },
    { name: "a missing reason", yaml: doc("permissions:", "  - {kind: accessibility}"), path: "permissions[0].reason", line: 4, message: "is required" },
    { name: "a missing kind", yaml: doc("permissions:", "  - {reason: r}"), path: "permissions[0].kind", line: 4, message: "is required" },
    { name: "an unknown key", yaml: doc("permissions:", "  - {kind: accessibility, reason: r, scope: all}"), path: "permissions[0].scope", line: 4, message: 'unknown key "scope"' },
    { name: "a map instead of a list", yaml: doc("permissions: {kind: accessibility}"), path: "permissions", line: 3, message: "must be a list" }
  ])
})

describe("tools", () => {
  const overrides = doc("tools:", "  - search: deferred", "  - send: disabled", "  - read: enabled")

  it.each(["tools.ts", "src/tools.ts"])("accepts overrides when the bag has %s", (file) => {
    expect(valid(overrides, listing([file])).tools).toEqual([{ search: "deferred" }, { send: "disabled" }, { read: "enabled" }])
  })

  it("refuses overrides in a bag without tools.ts or src/tools.ts", () => {
    fails(overrides, { path: "tools", line: 4, message: "overrides tools, but the bag has no tools.ts or src/tools.ts" }, { listing: listing(["lib/tools.ts"]) })
  })

  it("accepts an empty list without a tools file", () => {
    valid(doc("tools: []"), listing([]))
  })

  it("does not judge the tools file without a listing", () => {
    valid(overrides)
  })

  it("refuses a tool metadata object, key by key", () => {
    fails(doc("tools:", "  - name: search", "    description: finds"), [
      { path: "tools[0].name", line: 4, message: "must be one of enabled, deferred, disabled" },
      { path: "tools[0].description", line: 5, message: "must be one of enabled, deferred, disabled" }
    ])
  })

  it("refuses a tool listed twice, at the second entry", () => {
    fails(doc("tools:", "  - search: deferred", "  - send: enabled", "  - search: disabled"), {
      path: "tools[2].search",
      line: 6,
      message: 'tool "search" is listed twice (first at tools[0])'
    })
  })

  rejects([
    { name: "an unknown visibility", yaml: doc("tools:", "  - search: hidden"), path: "tools[0].search", line: 4, message: "must be one of enabled, deferred, disabled" },
    { name: "two tools in one entry", yaml: doc("tools:", "  - {search: deferred, send: enabled}"), path: "tools[0]", line: 4, message: "must map exactly one tool name" },
    { name: "an empty entry", yaml: doc("tools:", "  - {}"), path: "tools[0]", line: 4, message: "must map exactly one tool name" },
    { name: "a bare tool name", yaml: doc("tools:", "  - search"), path: "tools[0]", line: 4, message: "must be a single-key map such as {search: deferred}" },
    { name: "a map instead of a list", yaml: doc("tools:", "  search: deferred"), path: "tools", line: 4, message: "must be a list" }
  ])
})
