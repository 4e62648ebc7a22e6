/** Top-level keys, strictness, retired and removed keys, extensions (spec: "Top-level keys", "extends", rule 7). */
import { describe, expect, it } from "vitest"
import { check, MINIMAL } from "../../support/manifest.js"
import { doc, fails, valid, type Row } from "./cases.js"

describe("top-level keys", () => {
  it("accepts the minimal manifest and decodes it as written", () => {
    expect(valid(MINIMAL)).toEqual({ name: "demo", description: "A demo bag" })
  })

  it("accepts every plain top-level key together", () => {
    const m = valid(
      doc(
        "version: 1.2.0",
        "instructions: Use the demo tools carefully.",
        "cli:",
        "  alias: dm",
        "default_notifier:",
        "  tool: notify",
        "auth:",
        "  command: demo-cli",
        "constants:",
        "  ANY: {nested: [1, 2]}"
      )
    )
    expect(m.version).toBe("1.2.0")
    expect(m.instructions).toBe("Use the demo tools carefully.")
    expect(m.cli).toEqual({ alias: "dm" })
  })

  it.each(["demo", "my.bag_2-x", "A1", "x", "a".repeat(100)])("accepts the name %s", (name) => {
    expect(valid(`name: ${name}\ndescription: d\n`).name).toBe(name)
  })

  const rows: ReadonlyArray<Row> = [
    { name: "missing name", yaml: "description: d\n", path: "name", line: 1, message: "is required" },
    { name: "missing description", yaml: "name: demo\n", path: "description", line: 1, message: "is required" },
    { name: "name with a space", yaml: "name: 'my bag'\ndescription: d\n", path: "name", line: 1, message: "letters, digits, dots, underscores and hyphens" },
    { name: "name starting with a hyphen", yaml: "name: -x\ndescription: d\n", path: "name", line: 1, message: "starting with a letter or digit" },
    { name: "name with a colon", yaml: "name: a:b\ndescription: d\n", path: "name", line: 1, message: "letters, digits" },
    // ASCII, and short enough to name a directory (a 5,000-character one failed install with ENAMETOOLONG).
    { name: "name with a non-ASCII letter", yaml: "name: héllo\ndescription: d\n", path: "name", line: 1, message: "must use only ASCII letters" },
    { name: "name of 101 characters", yaml: `name: ${"a".repeat(101)}\ndescription: d\n`, path: "name", line: 1, message: "100 characters at most" },
    { name: "name as a list", yaml: "name: [a]\ndescription: d\n", path: "name", line: 1, message: "must be a string, not a list" },
    { name: "empty description", yaml: "name: demo\ndescription: ''\n", path: "description", line: 2, message: "must not be empty" },
    { name: "description as a number", yaml: "name: demo\ndescription: 5\n", path: "description", line: 2, message: "must be a string, not the number 5" },
    { name: "version as a number", yaml: doc("version: 1.0"), path: "version", line: 3, message: "must be a string, not the number 1" },
    { name: "instructions as a list", yaml: doc("instructions: [a]"), path: "instructions", line: 3, message: "must be a string" },
    { name: "extends with a space", yaml: doc("extends: 'a b'"), path: "extends", line: 3, message: "letters, digits" },
    { name: "constants as a list", yaml: doc("constants: [1]"), path: "constants", line: 3, message: "must be a map" },
    { name: "an unknown key", yaml: doc("bogus: 1"), path: "bogus", line: 3, message: 'unknown key "bogus"' },
    { name: "a misspelt key", yaml: doc("descripton: x"), path: "descripton", line: 3, message: 'did you mean "description"?' },
    { name: "a misspelt schedules", yaml: doc("schedule: {}"), path: "schedule", line: 3, message: 'did you mean "schedules"?' }
  ]
  it.each(rows)("rejects $name", ({ yaml, path, line, message }) => {
    fails(yaml, { path, line, message })
  })

  it("reports every missing required key, not only the first", () => {
    fails("version: '1'\n", [
      { path: "name", line: 1, message: "is required" },
      { path: "description", line: 1, message: "is required" }
    ])
  })

  it("reports every unknown key in one pass", () => {
    fails(doc("one: 1", "two: 2"), [
      { path: "one", line: 3, message: "unknown key" },
      { path: "two", line: 4, message: "unknown key" }
    ])
  })
})

describe("retired and removed keys (rule 7)", () => {
  it("accepts verbs and nouns and leaves them out of the decoded manifest", () => {
    const m = valid(doc("verbs: [get, set]", "nouns:", "  thing: {anything: goes}"))
    expect(m).toEqual({ name: "demo", description: "A demo bag" })
    expect("verbs" in m).toBe(false)
  })

  it("rejects tool-metadata naming tools as its replacement", () => {
    fails(doc("tool-metadata: []"), { path: "tool-metadata", line: 3, message: "`tools`" })
  })

  it("rejects deployments naming services as its replacement", () => {
    fails(doc("deployments:", "  web: {}"), { path: "deployments", line: 3, message: "`services`" })
  })

  it("rejects both, each once, and does not also call them unknown", () => {
    const r = fails(doc("tool-metadata: [x]", "deployments: {}"), [
      { path: "tool-metadata", line: 3, message: "was removed" },
      { path: "deployments", line: 4, message: "was removed" }
    ])
    expect(r.lines.join("\n")).not.toContain("unknown key")
  })
})

describe("extensions (extends)", () => {
  it("accepts an extension declaring only the allowed keys", () => {
    const m = valid(
      [
        "name: ext",
        "extends: parent",
        "description: An extension",
        "version: '2'",
        "instructions: text",
        "tools:",
        "  - search: deferred",
        "dependencies:",
        "  jq: {reason: parses JSON}",
        "schedules:",
        "  nightly: {every: 1d, action: tidy}",
        "scripts:",
        "  go: {description: run it, command: ls}",
        "verbs: [ignored]"
      ].join("\n") + "\n"
    )
    expect(m.extends).toBe("parent")
  })

  const refused = [
    ["bags", "[a]"],
    ["requires", "{a: {}}"],
    ["permissions", "[]"],
    ["prompts", "{entry: p.ts}"],
    ["traits", "{t: {description: d}}"],
    ["bounds", "{}"],
    ["constants", "{A: 1}"],
    ["credentials", "{}"],
    ["vendors", "[]"],
    ["mcp-servers", "{}"],
    ["auth", "{command: x}"],
    ["cli", "{alias: x}"],
    ["default_notifier", "{tool: x}"],
    ["slash-commands", "{}"],
    ["hooks", "[]"],
    ["store", "{}"],
    ["stores", "{}"],
    ["snapshots", "{}"],
    ["restores", "{}"],
    ["services", "{}"],
    ["apps", "{}"],
    ["jobs", "{}"],
    ["infra", "{}"],
    ["provides", "{}"]
  ] as const
  it.each(refused)("rejects %s on an extension, telling to declare it on the parent", (key, value) => {
    fails(`name: ext\nextends: parent\ndescription: d\n${key}: ${value}\n`, {
      path: key,
      line: 4,
      message: `an extension may not declare ${key}; declare it on the parent bag "parent"`
    })
  })

  it("reports each refused key once and does not validate its contents", () => {
    fails("name: ext\nextends: parent\ndescription: d\njobs:\n  Bad_Name: 5\nstores: nonsense\n", [
      { path: "jobs", line: 4, message: "an extension may not declare jobs" },
      { path: "stores", line: 6, message: "an extension may not declare stores" }
    ])
  })

  it("still validates the allowed keys of an extension", () => {
    fails("name: ext\nextends: parent\ndescription: d\nscripts:\n  go: {description: d}\n", {
      path: "scripts.go",
      line: 5,
      message: "needs exactly one way to start it"
    })
  })

  it("puts no limit on a bag that does not extend another", () => {
    expect(check(doc("jobs: {}", "stores: {}")).lines).toEqual([])
  })
})
