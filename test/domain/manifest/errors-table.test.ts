/**
 * The spec's Errors table, row by row, for the rows `svc bag check` decides: a passing and a
 * failing manifest each, the failure naming its key path and line. (Rows decided at run time,
 * such as an unmet requirement, a failing preflight or a refused route, are not the checker's.)
 */
import { describe, it } from "vitest"
import type { BagListing } from "../../../src/domain/manifest/Environment.js"
import { listing } from "../../support/manifest.js"
import { doc, fails, valid, type Expected } from "./cases.js"

interface ErrorsRow {
  readonly condition: string
  readonly pass: string
  readonly fail: string
  readonly expected: Expected
  readonly listing?: BagListing
}

const rows: ReadonlyArray<ErrorsRow> = [
  {
    condition: "unknown key anywhere in the manifest",
    pass: doc("scripts:", "  go: {description: d, command: ls}"),
    fail: doc("scripts:", "  go: {description: d, command: ls, shell: zsh}"),
    expected: { path: "scripts.go.shell", line: 4, message: 'unknown key "shell"' }
  },
  {
    condition: "extension declares a key outside its allowed list",
    pass: "name: ext\nextends: parent\ndescription: d\nscripts: {}\n",
    fail: "name: ext\nextends: parent\ndescription: d\ntraits: {}\n",
    expected: { path: "traits", line: 4, message: 'declare it on the parent bag "parent"' }
  },
  {
    condition: "tool-metadata present",
    pass: doc("tools: []"),
    fail: doc("tool-metadata: []"),
    expected: { path: "tool-metadata", line: 3, message: "`tools`" }
  },
  {
    condition: "deployments present",
    pass: doc("services: {}"),
    fail: doc("deployments: {}"),
    expected: { path: "deployments", line: 3, message: "`services`" }
  },
  {
    condition: "trait includes cycle",
    pass: doc("traits:", "  a: {description: d, includes: [b]}", "  b: {description: d}"),
    fail: doc("traits:", "  a: {description: d, includes: [b]}", "  b: {description: d, includes: [a]}"),
    expected: { path: "traits.a.includes", line: 4, message: "cycle" }
  },
  {
    condition: "trait includes unknown name",
    pass: doc("traits:", "  a: {description: d, includes: [b]}", "  b: {description: d}"),
    fail: doc("traits:", "  a: {description: d, includes: [c]}", "  b: {description: d}"),
    expected: { path: "traits.a.includes[0]", line: 4, message: 'names trait "c"' }
  },
  {
    condition: "vendor listed twice",
    pass: doc("vendors:", "  - {id: a, label: A, credential: null, models: [{id: m, label: M, kind: completion}]}", "  - {id: b, label: B, credential: null, models: [{id: m, label: M, kind: completion}]}"),
    fail: doc("vendors:", "  - {id: a, label: A, credential: null, models: [{id: m, label: M, kind: completion}]}", "  - {id: a, label: B, credential: null, models: [{id: m, label: M, kind: completion}]}"),
    expected: { path: "vendors[1].id", line: 5, message: "listed twice" }
  },
  {
    condition: "model listed twice in a vendor",
    pass: doc("vendors:", "  - {id: a, label: A, credential: null, models: [{id: m, label: M, kind: completion}, {id: n, label: N, kind: completion}]}"),
    fail: doc("vendors:", "  - {id: a, label: A, credential: null, models: [{id: m, label: M, kind: completion}, {id: m, label: N, kind: completion}]}"),
    expected: { path: "vendors[0].models[1].id", line: 4, message: "listed twice in this vendor" }
  },
  {
    condition: "two models of one kind claiming one role",
    pass: doc("vendors:", "  - {id: a, label: A, credential: null, models: [{id: m, label: M, kind: completion, roles: [default]}, {id: n, label: N, kind: completion, roles: [small]}]}"),
    fail: doc("vendors:", "  - {id: a, label: A, credential: null, models: [{id: m, label: M, kind: completion, roles: [default]}, {id: n, label: N, kind: completion, roles: [default]}]}"),
    expected: { path: "vendors[0].models[1].roles[0]", line: 4, message: "claim the role default" }
  },
  {
    condition: "both store and stores declared",
    pass: doc("stores:", "  a: {owned_by: node, engine: sqlite, migrations: m}"),
    fail: doc("store: {owned_by: node, engine: sqlite, migrations: m}", "stores:", "  a: {owned_by: node, engine: sqlite, migrations: m}"),
    expected: { path: "stores", line: 5, message: "together with store" }
  },
  {
    condition: "a service sets both entry and command",
    pass: doc("services:", "  s: {description: d, entry: s.js}"),
    fail: doc("services:", "  s: {description: d, entry: s.js, command: node}"),
    expected: { path: "services.s", line: 4, message: "found entry and command" }
  },
  {
    condition: "a script sets neither entry nor command",
    pass: doc("scripts:", "  s: {description: d, command: ls}"),
    fail: doc("scripts:", "  s: {description: d}"),
    expected: { path: "scripts.s", line: 4, message: "none is set" }
  },
  {
    condition: "a schedule lacks exactly one trigger",
    pass: doc("schedules:", "  s: {every: 1h, action: a}"),
    fail: doc("schedules:", "  s: {action: a}"),
    expected: { path: "schedules.s", line: 4, message: "exactly one trigger" }
  },
  {
    condition: "a schedule lacks exactly one payload",
    pass: doc("schedules:", "  s: {every: 1h, action: a}"),
    fail: doc("schedules:", "  s: {every: 1h, action: a, entry: s.js}"),
    expected: { path: "schedules.s", line: 4, message: "exactly one payload" }
  },
  {
    condition: "a schedule names a bound this bag does not declare",
    pass: doc("bounds:", "  real: {description: r, bound: {deniedTools: [x]}}", "schedules:", "  s: {every: 1h, action: a, bounds: [real, 'demo:real', 'other:far']}"),
    fail: doc("bounds:", "  real: {description: r, bound: {deniedTools: [x]}}", "schedules:", "  s: {every: 1h, action: a, bounds: [real, 'demo:rael']}"),
    expected: { path: "schedules.s.bounds[1]", line: 6, message: 'names bound "rael", which this bag does not declare; did you mean "real"?' }
  },
  {
    condition: "a schedule's trait is empty (said once: not also as an undeclared trait)",
    pass: doc("schedules:", "  s: {every: 1h, action: a, traits: [demo]}"),
    fail: doc("schedules:", "  s: {every: 1h, action: a, traits: ['']}"),
    expected: { path: "schedules.s.traits[0]", line: 4, message: "must not be empty" }
  },
  {
    condition: "a schedule names a trait this bag does not declare (its own automatic trait is known)",
    pass: doc("traits:", "  t: {description: d}", "schedules:", "  s: {every: 1h, action: a, traits: [t, demo, 'demo:t', 'other:x']}"),
    fail: doc("traits:", "  t: {description: d}", "schedules:", "  s: {every: 1h, action: a, traits: [ghost]}"),
    expected: { path: "schedules.s.traits[0]", line: 6, message: 'names trait "ghost", which this bag does not declare' }
  },
  {
    condition: "a bag composes itself in the list form",
    pass: doc("bags: [base, other]"),
    fail: doc("bags: [base, demo]"),
    expected: { path: "bags[1]", line: 3, message: 'names this bag itself ("demo"): a bag cannot compose itself' }
  },
  {
    condition: "a bag composes itself in the map form",
    pass: doc("bags:", "  base:"),
    fail: doc("bags:", "  demo:"),
    expected: { path: "bags.demo", line: 4, message: "a bag cannot compose itself" }
  },
  {
    condition: "a list names one bag twice",
    pass: doc("bags: [a, b]"),
    fail: doc("bags: [a, b, a]"),
    expected: { path: "bags[2]", line: 3, message: 'names bag "a" twice (first at bags[0])' }
  },
  {
    condition: "a composed bag's name is not a bag name",
    pass: doc("bags: [my-bag]"),
    fail: doc("bags: ['my bag']"),
    expected: { path: "bags[0]", line: 3, message: "must use only ASCII letters, digits, dots, underscores and hyphens" }
  },
  {
    condition: "a bag's name holds a secret's shape (advertised and recorded)",
    pass: "name: svc-wk-tools\ndescription: d\n",
    fail: "name: svc_wk_tools\ndescription: d\n",
    expected: { path: "name", line: 1, message: "holds what is shaped as an svc secret (svc_wk_…, svc_jt_…, svc_jk_…): a bag is copied as it is" }
  },
  {
    condition: "a job's version holds a secret's shape (its address is advertised and journaled)",
    pass: doc("jobs:", "  build:", "    version: 1.0.0-svc-wk", "    runs: {using: node, main: x.mjs}"),
    fail: doc("jobs:", "  build:", "    version: 1.0.0-svc_wk_AbCd", "    runs: {using: node, main: x.mjs}"),
    expected: { path: "jobs.build.version", line: 5, message: "holds what is shaped as an svc secret" }
  },
  {
    condition: "a required label holds a secret's shape (journaled with every run)",
    pass: doc("jobs:", "  build:", "    runs: {using: node, main: x.mjs}", "    requires: {labels: [tier=gold]}"),
    fail: doc("jobs:", "  build:", "    runs: {using: node, main: x.mjs}", "    requires: {labels: [tier=svc_jt_x]}"),
    expected: { path: "jobs.build.requires.labels[0]", line: 6, message: "holds what is shaped as an svc secret" }
  },
  {
    condition: "the description is more than one line",
    pass: "name: demo\ndescription: |\n  one line\n",
    fail: "name: demo\ndescription: |\n  two\n  lines\n",
    expected: { path: "description", line: 2, message: "must be one line" }
  },
  {
    condition: "the description holds a carriage return (a terminal would overwrite the line)",
    pass: 'name: demo\ndescription: "first part"\n',
    fail: 'name: demo\ndescription: "first part\\rSECOND"\n',
    expected: { path: "description", line: 2, message: "must be one line" }
  },
  {
    condition: "a hook's timeout is not finite",
    pass: doc("hooks:", "  - {event: stop, run: h.js, timeout: 5}"),
    fail: doc("hooks:", "  - {event: stop, run: h.js, timeout: .inf}"),
    expected: { path: "hooks[0].timeout", line: 4, message: "must be a finite number of seconds" }
  },
  {
    condition: "a hook's timeout is not a number of seconds",
    pass: doc("hooks:", "  - {event: stop, run: h.js, timeout: 5}"),
    fail: doc("hooks:", "  - {event: stop, run: h.js, timeout: 5s}"),
    expected: { path: "hooks[0].timeout", line: 4, message: "seconds as a number" }
  },
  {
    condition: "tools overrides without tools.ts or src/tools.ts",
    pass: doc("tools:", "  - search: deferred"),
    fail: doc("tools:", "  - search: deferred"),
    expected: { path: "tools", line: 4, message: "no tools.ts or src/tools.ts" },
    listing: listing(["README.md"])
  },
  {
    condition: "a tool listed twice",
    pass: doc("tools:", "  - search: deferred", "  - send: disabled"),
    fail: doc("tools:", "  - search: deferred", "  - search: disabled"),
    expected: { path: "tools[1].search", line: 5, message: "listed twice" }
  },
  {
    condition: "infra.root does not exist",
    pass: doc("infra: {provider: terraform, root: tf}"),
    fail: doc("infra: {provider: terraform, root: terraform}"),
    expected: { path: "infra.root", line: 3, message: "terraform does not exist in the bag" },
    listing: listing(["tf/main.tf", "src/tools.ts"])
  }
]

describe("the Errors table", () => {
  it.each(rows)("passes without: $condition", (row) => {
    valid(row.pass, row.listing === undefined ? undefined : listing(["src/tools.ts", "tf/main.tf"]))
  })

  it.each(rows)("fails with: $condition", (row) => {
    fails(row.fail, row.expected, row.listing === undefined ? {} : { listing: row.listing })
  })
})
