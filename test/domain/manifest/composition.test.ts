/** bags (composition), requires, dependencies (spec: "bags", "requires", "dependencies"). */
import { describe, expect, it } from "vitest"
import { check, listing } from "../../support/manifest.js"
import { doc, fails, valid, type Row } from "./cases.js"

describe("bags", () => {
  it("accepts the list form", () => {
    expect(valid(doc("bags: [mail, calendar]")).bags).toEqual(["mail", "calendar"])
  })

  it("accepts the map form with every kind of source, and an entry with no value", () => {
    const m = valid(
      doc(
        "bags:",
        "  pinned: {repo: owner/pinned, rev: 0123abc}",
        "  tracked: {repo: 'https://example.com/x.git', ref: main, subdir: bags/tracked}",
        "  plain: {repo: owner/plain}",
        "  local: {path: ./children/local}",
        "  nested: {path: vendor/nested}",
        "  sibling: {path: ../sibling}",
        "  registry:"
      )
    )
    expect(m.bags).toEqual({
      pinned: { repo: "owner/pinned", rev: "0123abc" },
      tracked: { repo: "https://example.com/x.git", ref: "main", subdir: "bags/tracked" },
      plain: { repo: "owner/plain" },
      local: { path: "./children/local" },
      nested: { path: "vendor/nested" },
      sibling: { path: "../sibling" },
      registry: null
    })
  })

  const rows: ReadonlyArray<Row> = [
    { name: "a string", yaml: doc("bags: mail"), path: "bags", line: 3, message: "must be a list of bag names or a map of bags" },
    { name: "a list item that is not a string", yaml: doc("bags: [mail, 5]"), path: "bags[1]", line: 3, message: "must be a string" },
    { name: "an entry that is a string", yaml: doc("bags:", "  a: owner/a"), path: "bags.a", line: 4, message: "a map with repo or path, or nothing" },
    { name: "both repo and path", yaml: doc("bags:", "  a: {repo: o/a, path: a}"), path: "bags.a", line: 4, message: "sets both repo and path" },
    { name: "neither repo nor path", yaml: doc("bags:", "  a: {}"), path: "bags.a", line: 4, message: "needs exactly one of repo or path" },
    { name: "rev conflicting with ref", yaml: doc("bags:", "  a: {repo: o/a, rev: abc, ref: main}"), path: "bags.a.ref", line: 4, message: "conflicts with rev" },
    { name: "subdir with path", yaml: doc("bags:", "  a: {path: a, subdir: s}"), path: "bags.a.subdir", line: 4, message: "conflicts with path; it needs repo" },
    { name: "rev with path", yaml: doc("bags:", "  a: {path: a, rev: abc}"), path: "bags.a.rev", line: 4, message: "conflicts with path; it needs repo" },
    { name: "ref with path", yaml: doc("bags:", "  a: {path: a, ref: main}"), path: "bags.a.ref", line: 4, message: "conflicts with path; it needs repo" },
    { name: "an unknown key in an entry", yaml: doc("bags:", "  a:", "    repo: o/a", "    branch: main"), path: "bags.a.branch", line: 6, message: 'unknown key "branch"' },
    { name: "an absolute path", yaml: doc("bags:", "  a: {path: /opt/a}"), path: "bags.a.path", line: 4, message: "must be a relative path (no leading /" },
    { name: "a subdir climbing out of the clone", yaml: doc("bags:", "  a: {repo: o/a, subdir: ../x}"), path: "bags.a.subdir", line: 4, message: "must be a relative path inside the bag" },
    { name: "an empty repo", yaml: doc("bags:", "  a: {repo: ''}"), path: "bags.a.repo", line: 4, message: "must not be empty" }
  ]
  it.each(rows)("rejects $name", ({ yaml, path, line, message }) => {
    fails(yaml, { path, line, message })
  })

  it.each(["rev", "ref", "subdir"])("rejects %s without repo, also saying the entry has no source", (key) => {
    fails(doc("bags:", `  a: {${key}: x}`), [
      { path: `bags.a.${key}`, line: 4, message: "needs repo" },
      { path: "bags.a", line: 4, message: "needs exactly one of repo or path" }
    ])
  })
})

describe("requires", () => {
  it("accepts every key, and an empty requirement", () => {
    const m = valid(
      doc(
        "requires:",
        "  mail: {reason: sends the digest, optional: true, resource: smtp, allow-remote: true}",
        "  calendar: {}"
      )
    )
    expect(m.requires).toEqual({ mail: { reason: "sends the digest", optional: true, resource: "smtp", "allow-remote": true }, calendar: {} })
  })

  const rows: ReadonlyArray<Row> = [
    { name: "a list", yaml: doc("requires: [mail]"), path: "requires", line: 3, message: "must be a map" },
    { name: "an entry that is not a map", yaml: doc("requires:", "  mail: yes"), path: "requires.mail", line: 4, message: "must be a map" },
    { name: "optional as a string", yaml: doc("requires:", "  mail: {optional: 'yes'}"), path: "requires.mail.optional", line: 4, message: "must be true or false" },
    { name: "allow-remote as a number", yaml: doc("requires:", "  mail: {allow-remote: 1}"), path: "requires.mail.allow-remote", line: 4, message: "must be true or false" },
    { name: "reason as a list", yaml: doc("requires:", "  mail: {reason: [a]}"), path: "requires.mail.reason", line: 4, message: "must be a string" },
    { name: "an unknown key", yaml: doc("requires:", "  mail: {version: 2}"), path: "requires.mail.version", line: 4, message: 'unknown key "version"' },
    { name: "a bag name with a space", yaml: doc("requires:", "  'my mail': {}"), path: 'requires["my mail"]', line: 4, message: '"my mail" is not a valid name: must use only ASCII letters, digits' }
  ]
  it.each(rows)("rejects $name", ({ yaml, path, line, message }) => {
    fails(yaml, { path, line, message })
  })
})

describe("dependencies", () => {
  it("accepts a map of packages with every key", () => {
    const m = valid(
      doc(
        "dependencies:",
        "  jq: {reason: parses JSON}",
        "  ripgrep:",
        "    reason: searches",
        "    bin: rg",
        "    optional: true",
        "    install: {macos: brew install ripgrep, linux: apt-get install ripgrep}",
        "  owner/tap/tool: {reason: tapped, bin: tool}"
      )
    )
    expect(m.dependencies).toMatchObject({ ripgrep: { bin: "rg", optional: true, install: { macos: "brew install ripgrep" } } })
  })

  it("accepts a path to a file in the bag, which must exist when the listing is known", () => {
    expect(valid(doc("dependencies: deps/Brewfile"), listing(["deps/Brewfile"])).dependencies).toBe("deps/Brewfile")
    fails(doc("dependencies: deps/Brewfile"), { path: "dependencies", line: 3, message: "deps/Brewfile does not exist in the bag" }, { listing: listing([]) })
  })

  const rows: ReadonlyArray<Row> = [
    { name: "a package without reason", yaml: doc("dependencies:", "  jq: {bin: jq}"), path: "dependencies.jq.reason", line: 4, message: "is required" },
    { name: "a package key with / and no bin", yaml: doc("dependencies:", "  owner/tap/tool: {reason: r}"), path: 'dependencies["owner/tap/tool"]', line: 4, message: 'contains "/", so it needs bin' },
    { name: "optional as a string", yaml: doc("dependencies:", "  jq: {reason: r, optional: maybe}"), path: "dependencies.jq.optional", line: 4, message: "must be true or false" },
    { name: "an install platform that is not macos or linux", yaml: doc("dependencies:", "  jq:", "    reason: r", "    install: {windows: choco install jq}"), path: "dependencies.jq.install.windows", line: 6, message: 'unknown key "windows"' },
    { name: "an install command that is not a string", yaml: doc("dependencies:", "  jq: {reason: r, install: {macos: [brew]}}"), path: "dependencies.jq.install.macos", line: 4, message: "must be a string" },
    { name: "an unknown package key", yaml: doc("dependencies:", "  jq: {reason: r, version: 1}"), path: "dependencies.jq.version", line: 4, message: 'unknown key "version"' },
    { name: "a package that is not a map", yaml: doc("dependencies:", "  jq: needed"), path: "dependencies.jq", line: 4, message: "must be a map" },
    { name: "a list", yaml: doc("dependencies: [jq]"), path: "dependencies", line: 3, message: "a map of packages or a path to a file inside the bag" },
    { name: "a path outside the bag", yaml: doc("dependencies: ../Brewfile"), path: "dependencies", line: 3, message: "must be a relative path inside the bag" }
  ]
  it.each(rows)("rejects $name", ({ yaml, path, line, message }) => {
    fails(yaml, { path, line, message })
  })

  it("does not judge file existence without a listing", () => {
    expect(check(doc("dependencies: deps/Brewfile")).lines).toEqual([])
  })
})
