/** jobs and their runs (spec: "jobs" and "runs" tables, Limits: preflight and validate timeouts). */
import { describe, expect, it } from "vitest"
import { listing } from "../../support/manifest.js"
import { doc, fails, valid, type Row } from "./cases.js"

const rejects = (rows: ReadonlyArray<Row>) =>
  it.each(rows)("rejects $name", ({ yaml, path, line, message }) => {
    fails(yaml, { path, line, message })
  })

/** A process job `build` with the given extra lines (each indented under the job): line 6 onward. */
const job = (...lines: ReadonlyArray<string>) =>
  doc("jobs:", "  build:", "    runs: {using: process, command: [make]}", ...lines.map((l) => `    ${l}`))

describe("jobs", () => {
  it("takes a process command's arguments as written, a blank or empty one too (tr ' ' _, -N \"\"): only the program must be named", () => {
    const m = valid(doc("jobs:", "  cut:", "    runs: {using: process, command: [tr, ' ', _]}", "  nl:", "    runs: {using: process, command: [printf, '%s|%s', '', x]}"))
    expect(m.jobs?.["cut"]?.runs).toMatchObject({ command: ["tr", " ", "_"] })
    expect(m.jobs?.["nl"]?.runs).toMatchObject({ command: ["printf", "%s|%s", "", "x"] })
  })

  it("accepts node, process and action jobs with every key", () => {
    const m = valid(
      doc(
        "bounds:",
        "  sandbox: {description: d, bound: {deniedTools: [shell]}}",
        "jobs:",
        "  render:",
        "    description: renders",
        "    version: 1.2.0",
        "    runs:",
        "      using: node",
        "      main: jobs/render.js",
        "      secrets: [API_TOKEN]",
        "      env: [MODE=fast]",
        "      working-directory: work",
        "    input_schema: {type: object, properties: {page: {type: integer}}, required: [page]}",
        "    output_schema: {type: object}",
        "    requires: {tools: [fetch], secrets: [API_TOKEN], bins: [ffmpeg], labels: [gpu=true, os=macos]}",
        "    timeout: 5m",
        "    bounds: [sandbox]",
        "  build:",
        "    version: 3",
        "    runs: {using: process, command: [make, all]}",
        "    preflight: {command: [make, --version], timeout: 60, hint: install make}",
        "    validate: {files_exist: [dist/out.txt], command: make check, timeout: 600}",
        "    timeout: 90",
        "  triage:",
        "    runs: {using: action, action: 'mail:triage'}",
        "    requires: {labels: [team=ops]}"
      )
    )
    expect(m.jobs?.["render"]?.runs).toEqual({ using: "node", main: "jobs/render.js", secrets: ["API_TOKEN"], env: ["MODE=fast"], "working-directory": "work" })
    expect(m.jobs?.["build"]?.version).toBe(3)
    expect(m.jobs?.["triage"]?.runs).toEqual({ using: "action", action: "mail:triage" })
  })

  it.each(["build", "build-2", "a1", "x", "nightly-report-v2"])("accepts the kebab-case name %s", (name) => {
    valid(doc("jobs:", `  ${name}: {runs: {using: process, command: [x]}}`))
  })

  it.each([
    ["Build", "jobs.Build"],
    ["build_x", "jobs.build_x"],
    ["-build", "jobs.-build"],
    ["build-", "jobs.build-"],
    ["build--x", "jobs.build--x"],
    ["build x", 'jobs["build x"]']
  ])("refuses the name %j", (name, path) => {
    fails(doc("jobs:", `  '${name}': {runs: {using: process, command: [x]}}`), {
      path,
      line: 4,
      message: `"${name}" is not a valid name: use kebab-case`
    })
  })

  it("refuses secret names that could not name an environment variable (and a file beside it)", () => {
    fails(doc("jobs:", "  build:", "    runs: {using: process, command: [x], secrets: [../../etc/passwd, LAB_TOKEN]}", "    requires: {secrets: ['a b']}"), [
      { path: "jobs.build.runs.secrets[0]", line: 5, message: "must be a secret name usable as an environment variable" },
      { path: "jobs.build.requires.secrets[0]", line: 6, message: "must be a secret name usable as an environment variable" }
    ])
    valid(doc("jobs:", "  build:", "    runs: {using: process, command: [x], secrets: [LAB_TOKEN, _x1]}"))
  })

  it("names a key no kind of runs has even when using is missing or wrong, with its likely spelling", () => {
    fails(doc("jobs:", "  build:", "    runs: {usign: node, main: a.js}"), [
      { path: "jobs.build.runs.usign", line: 5, message: 'unknown key "usign"; did you mean "using"?' },
      { path: "jobs.build.runs.using", line: 5, message: "is required" }
    ])
    fails(doc("jobs:", "  build:", "    runs: {using: nodejs, mian: a.js}"), [
      { path: "jobs.build.runs.using", line: 5, message: "must be one of node, process, action" },
      { path: "jobs.build.runs.mian", line: 5, message: 'unknown key "mian"; did you mean "main"?' }
    ])
  })

  rejects([
    { name: "a job without runs", yaml: doc("jobs:", "  build:", "    description: d"), path: "jobs.build.runs", line: 5, message: "is required" },
    { name: "runs that is not a map", yaml: doc("jobs:", "  build: {runs: make}"), path: "jobs.build.runs", line: 4, message: "a map with using: node, process or action" },
    { name: "runs without using", yaml: doc("jobs:", "  build:", "    runs: {main: a.js}"), path: "jobs.build.runs.using", line: 5, message: "is required" },
    { name: "an unknown using", yaml: doc("jobs:", "  build:", "    runs: {using: shell, command: make}"), path: "jobs.build.runs.using", line: 5, message: "must be one of node, process, action" },
    // Two letters swapped is one slip, not two.
    { name: "a swapped main", yaml: doc("jobs:", "  build:", "    runs: {using: node, main: a.js, evn: [A=1]}"), path: "jobs.build.runs.evn", line: 5, message: 'unknown key "evn"; did you mean "env"?' },
    { name: "a node job without main", yaml: doc("jobs:", "  build:", "    runs: {using: node}"), path: "jobs.build.runs.main", line: 5, message: "is required" },
    { name: "a process job without command", yaml: doc("jobs:", "  build:", "    runs: {using: process}"), path: "jobs.build.runs.command", line: 5, message: "is required" },
    { name: "a process command as a string", yaml: doc("jobs:", "  build:", "    runs: {using: process, command: make all}"), path: "jobs.build.runs.command", line: 5, message: "must be a list" },
    { name: "an empty process command", yaml: doc("jobs:", "  build:", "    runs: {using: process, command: []}"), path: "jobs.build.runs.command", line: 5, message: "must be a non-empty list" },
    { name: "a process command naming no program", yaml: doc("jobs:", "  build:", "    runs: {using: process, command: [' ', x]}"), path: "jobs.build.runs.command[0]", line: 5, message: "must name the program (then its arguments): it is empty" },
    { name: "an action job without action", yaml: doc("jobs:", "  build:", "    runs: {using: action}"), path: "jobs.build.runs.action", line: 5, message: "is required" },
    { name: "an action reference with a space", yaml: doc("jobs:", "  build:", "    runs: {using: action, action: 'do it'}"), path: "jobs.build.runs.action", line: 5, message: "must name an action" },
    { name: "main on a process job", yaml: doc("jobs:", "  build:", "    runs: {using: process, command: [x], main: a.js}"), path: "jobs.build.runs.main", line: 5, message: "applies only to node jobs" },
    { name: "command on a node job", yaml: doc("jobs:", "  build:", "    runs: {using: node, main: a.js, command: [x]}"), path: "jobs.build.runs.command", line: 5, message: "applies only to process jobs" },
    { name: "action on a node job", yaml: doc("jobs:", "  build:", "    runs: {using: node, main: a.js, action: x}"), path: "jobs.build.runs.action", line: 5, message: "applies only to action jobs" },
    { name: "secrets on an action job", yaml: doc("jobs:", "  build:", "    runs: {using: action, action: x, secrets: [A]}"), path: "jobs.build.runs.secrets", line: 5, message: "does not apply to action jobs" },
    { name: "env on an action job", yaml: doc("jobs:", "  build:", "    runs: {using: action, action: x, env: [A=1]}"), path: "jobs.build.runs.env", line: 5, message: "does not apply to action jobs" },
    { name: "working-directory on an action job", yaml: doc("jobs:", "  build:", "    runs: {using: action, action: x, working-directory: w}"), path: "jobs.build.runs.working-directory", line: 5, message: "does not apply to action jobs" },
    { name: "a command argument with a NUL (it failed at every run)", yaml: doc("jobs:", "  build:", '    runs: {using: process, command: [make, "a\\0b"]}'), path: "jobs.build.runs.command[1]", line: 5, message: "holds a NUL character" },
    { name: "an env value with a NUL", yaml: doc("jobs:", "  build:", '    runs: {using: node, main: a.js, env: ["K=a\\0b"]}'), path: "jobs.build.runs.env[0]", line: 5, message: "no NUL character" },
    { name: "an env item that is not KEY=VALUE", yaml: doc("jobs:", "  build:", "    runs: {using: node, main: a.js, env: ['=x']}"), path: "jobs.build.runs.env[0]", line: 5, message: "must be a KEY=VALUE literal" },
    { name: "a main outside the bag", yaml: doc("jobs:", "  build:", "    runs: {using: node, main: ../a.js}"), path: "jobs.build.runs.main", line: 5, message: "must be a relative path inside the bag" },
    { name: "an unknown runs key", yaml: doc("jobs:", "  build:", "    runs:", "      using: node", "      main: a.js", "      shell: bash"), path: "jobs.build.runs.shell", line: 8, message: 'unknown key "shell"' },
    { name: "an unknown job key", yaml: job("retries: 3"), path: "jobs.build.retries", line: 6, message: 'unknown key "retries"' },
    { name: "a version with @", yaml: job("version: 1@2"), path: "jobs.build.version", line: 6, message: "must be a version such as 1.0.0" },
    { name: "a version with a colon", yaml: job("version: 'a:b'"), path: "jobs.build.version", line: 6, message: "no ':' or '@'" },
    { name: "a negative version", yaml: job("version: -1"), path: "jobs.build.version", line: 6, message: "must be a non-negative number" },
    { name: "a version that is a list", yaml: job("version: [1]"), path: "jobs.build.version", line: 6, message: "a version string or number" },
    { name: "a label that is not KEY=VALUE", yaml: job("requires: {labels: [gpu]}"), path: "jobs.build.requires.labels[0]", line: 6, message: "must be a KEY=VALUE label" },
    { name: "a label with a comma", yaml: job("requires: {labels: ['os=mac,linux']}"), path: "jobs.build.requires.labels[0]", line: 6, message: "no commas" },
    // Parts of the address a worker advertises, and labels it is judged by: bounded as the route bounds them.
    { name: "a version over 64 characters", yaml: job(`version: ${"1".repeat(65)}a`), path: "jobs.build.version", line: 6, message: "64 characters at most" },
    { name: "a job name over 100 characters", yaml: doc("jobs:", `  ${"b".repeat(101)}:`, "    runs: {using: process, command: [make]}"), path: `jobs.${"b".repeat(101)}`, line: 4, message: "100 characters at most" },
    { name: "a label over 200 characters", yaml: job(`requires: {labels: ['k=${"v".repeat(199)}']}`), path: "jobs.build.requires.labels[0]", line: 6, message: "it is 201 characters long" },
    { name: "a label with a control character", yaml: job('requires: {labels: ["k=v\\e[31m"]}'), path: "jobs.build.requires.labels[0]", line: 6, message: "control characters" },
    { name: "an unknown requires key", yaml: job("requires: {memory: 4G}"), path: "jobs.build.requires.memory", line: 6, message: 'unknown key "memory"' },
    { name: "bounds as a string", yaml: job("bounds: sandbox"), path: "jobs.build.bounds", line: 6, message: "must be a list" },
    { name: "a job that is not a map", yaml: doc("jobs:", "  build: make"), path: "jobs.build", line: 4, message: "must be a map" }
  ])
})

describe("durations (job timeout)", () => {
  it.each([
    ["90", 90],
    ['"90"', "90"],
    ["30s", "30s"],
    ["5m", "5m"],
    ["2h", "2h"],
    ["1d", "1d"]
  ])("accepts %s", (written, decoded) => {
    expect(valid(job(`timeout: ${written}`)).jobs?.["build"]?.timeout).toBe(decoded)
  })

  it.each([["5x"], ['""'], ["1w"], ["[5]"], ["m"], [".5m"]])("refuses %s", (written) => {
    fails(job(`timeout: ${written}`), { path: "jobs.build.timeout", line: 6, message: "must be a duration: seconds as a number, or a number with s, m, h or d" })
  })

  it.each([["0", "0"], ["-1", "-1"], ["'0s'", '"0s"'], ["0m", '"0m"']])("refuses %s as no time at all, saying so", (written, shown) => {
    fails(job(`timeout: ${written}`), { path: "jobs.build.timeout", line: 6, message: `must be more than 0 seconds (${shown} is no time at all)` })
  })

  it("takes a year at most (a slip of 99999999999999999999d was taken, and shown as 8.64e+24 s)", () => {
    valid(job("timeout: 365d"))
    fails(job("timeout: 366d"), { path: "jobs.build.timeout", line: 6, message: "must be at most 31536000 seconds (365d)" })
    fails(job("timeout: 99999999999999999999d"), { path: "jobs.build.timeout", line: 6, message: "must be at most 31536000 seconds (365d)" })
  })
})

describe("preflight and validate", () => {
  it.each([["60"], ["1m"], ["30s"], ["'60'"]])("accepts a preflight timeout of %s (at most 60 seconds)", (t) => {
    valid(job(`preflight: {command: [probe], timeout: ${t}}`))
  })

  it.each([["61"], ["2m"], ["61s"], ["1h"]])("refuses a preflight timeout of %s", (t) => {
    fails(job(`preflight: {command: [probe], timeout: ${t}}`), { path: "jobs.build.preflight.timeout", line: 6, message: "must be at most 60 seconds" })
  })

  it.each([["600"], ["10m"], ["599s"]])("accepts a validate timeout of %s (at most 600 seconds)", (t) => {
    valid(job(`validate: {command: check, timeout: ${t}}`))
  })

  it.each([["601"], ["11m"], ["1h"], ["1d"]])("refuses a validate timeout of %s", (t) => {
    fails(job(`validate: {command: check, timeout: ${t}}`), { path: "jobs.build.validate.timeout", line: 6, message: "must be at most 600 seconds" })
  })

  it("reports a bad duration once, not also as over the limit", () => {
    fails(job("preflight: {command: [probe], timeout: soon}"), { path: "jobs.build.preflight.timeout", line: 6, message: "must be a duration" })
  })

  rejects([
    { name: "a preflight without command", yaml: job("preflight: {hint: install it}"), path: "jobs.build.preflight.command", line: 6, message: "is required" },
    { name: "a preflight with an unknown key", yaml: job("preflight: {command: x, retries: 2}"), path: "jobs.build.preflight.retries", line: 6, message: 'unknown key "retries"' },
    { name: "a preflight with an empty command list", yaml: job("preflight: {command: []}"), path: "jobs.build.preflight.command", line: 6, message: "must list at least one program" },
    { name: "a validate that checks nothing", yaml: job("validate: {timeout: 10}"), path: "jobs.build.validate", line: 6, message: "checks nothing" },
    { name: "files_exist outside the bag", yaml: job("validate: {files_exist: [/etc/passwd]}"), path: "jobs.build.validate.files_exist[0]", line: 6, message: "must be a relative path inside the bag" },
    { name: "a validate with an unknown key", yaml: job("validate: {command: x, files_missing: [a]}"), path: "jobs.build.validate.files_missing", line: 6, message: 'unknown key "files_missing"' }
  ])
})

describe("input_schema and output_schema", () => {
  it.each([
    ["properties without type", "{properties: {n: {type: integer}}}"],
    ["required properties not listed under properties", "{type: object, required: [page]}"],
    ["a union type", "{type: [string, number]}"],
    ["an open tuple", "{type: array, items: [{type: string}]}"],
    ["a format", "{type: string, format: date-time}"],
    ["an empty schema", "{}"]
  ])("accepts a valid JSON Schema with %s", (_what, schema) => {
    valid(job(`input_schema: ${schema}`))
  })

  it("names every unknown format in a schema, each at its own key (only ajv's first was said)", () => {
    const yaml = job("input_schema:", "  type: object", "  properties:", "    to: {type: string, format: emial}", "    at: {type: string, format: date-tim}", "    n: {type: string, format: nope}")
    fails(yaml, [
      { path: "jobs.build.input_schema.properties.to.format", line: 9, message: 'is not a format svc knows ("emial"); did you mean "email"? (JSON Schema)' },
      { path: "jobs.build.input_schema.properties.at.format", line: 10, message: 'is not a format svc knows ("date-tim"); did you mean "date-time"? (JSON Schema)' },
      { path: "jobs.build.input_schema.properties.n.format", line: 11, message: 'is not a format svc knows ("nope") (JSON Schema)' }
    ])
    // Asked again (the second answer comes from the cache of compiled schemas, or compiles anew): the same three.
    fails(yaml, { path: "jobs.build.input_schema.properties.n.format", line: 11, message: '("nope")' }, { count: 3 })
  })

  it("names every unknown format in a 2020-12 schema too", () => {
    fails(job("output_schema:", "  $schema: 'https://json-schema.org/draft/2020-12/schema'", "  prefixItems: [{format: uri}, {format: urll}, {format: emial}]"), [
      { path: "jobs.build.output_schema.prefixItems[1].format", line: 8, message: '("urll"); did you mean "url"?' },
      { path: "jobs.build.output_schema.prefixItems[2].format", line: 8, message: '("emial"); did you mean "email"?' }
    ])
  })

  it("names an array item of a schema by its index", () => {
    fails(job("input_schema: {type: array, items: [{type: string}, {type: strin}]}"), { path: "jobs.build.input_schema.items[1].type", line: 6, message: 'not "strin" (JSON Schema)' })
  })

  it("says every problem of a schema at once, each at its key: a value the meta-schema refuses, a misspelt keyword, an unknown format (the docs audit met them one check at a time)", () => {
    fails(job("output_schema: {tpye: object, properties: {a: {format: nope}}}"), [
      { path: "jobs.build.output_schema.tpye", line: 6, message: 'is not a JSON Schema keyword; did you mean "type"? (JSON Schema)' },
      { path: "jobs.build.output_schema.properties.a.format", line: 6, message: 'is not a format svc knows ("nope") (JSON Schema)' }
    ])
    fails(job("output_schema:", "  type: object", "  propertiez: {}", "  properties:", "    sha256: {type: strin, format: emial}", "    b: {type: numbr}"), [
      { path: "jobs.build.output_schema.properties.sha256.type", line: 10, message: 'not "strin" (JSON Schema)' },
      { path: "jobs.build.output_schema.properties.b.type", line: 11, message: 'not "numbr" (JSON Schema)' },
      { path: "jobs.build.output_schema.propertiez", line: 8, message: 'is not a JSON Schema keyword; did you mean "properties"? (JSON Schema)' },
      { path: "jobs.build.output_schema.properties.sha256.format", line: 10, message: '("emial"); did you mean "email"? (JSON Schema)' }
    ])
  })

  it("accepts valid JSON Schemas, draft 7 and 2020-12", () => {
    valid(
      job(
        "input_schema: {type: object, properties: {n: {type: integer, minimum: 1}}, additionalProperties: false}",
        "output_schema: {$schema: 'https://json-schema.org/draft/2020-12/schema', type: array, prefixItems: [{type: string}]}"
      )
    )
  })

  rejects([
    // At the key that is wrong, with what it may be (it used to point at the schema, quoting ajv's "data/type must be ...").
    { name: "an input_schema with an unknown type", yaml: job("input_schema: {type: nope}"), path: "jobs.build.input_schema.type", line: 6, message: 'must be one of "array", "boolean", "integer", "null", "number", "object", "string", not "nope" (JSON Schema)' },
    {
      name: "an output_schema with a property of an unknown type",
      yaml: job("output_schema:", "  type: object", "  properties:", "    sha256: {type: strin}"),
      path: "jobs.build.output_schema.properties.sha256.type",
      line: 9,
      message: 'must be one of "array", "boolean", "integer", "null", "number", "object", "string", not "strin" (JSON Schema)'
    },
    {
      name: "an input_schema with an unknown format, said at its format key with the nearest (ajv said it was ignored, at the root)",
      yaml: job("input_schema:", "  type: object", "  properties:", "    to: {type: string, format: emaill}"),
      path: "jobs.build.input_schema.properties.to.format",
      line: 9,
      message: 'is not a format svc knows ("emaill"); did you mean "email"? (JSON Schema)'
    },
    {
      name: "an unknown format under a property whose name needs escaping, at its own key (the fragment was percent-encoded)",
      yaml: job("input_schema:", "  type: object", "  properties:", "    'a b/c':", "      type: string", "      format: nope"),
      path: 'jobs.build.input_schema.properties["a b/c"].format',
      line: 11,
      message: 'is not a format svc knows ("nope")'
    },
    { name: "a schema number YAML reads as Infinity, said as such (it was said as null)", yaml: job("input_schema: {type: number, maximum: 1e400}"), path: "jobs.build.input_schema.maximum", line: 6, message: "must be number, not Infinity (a number beyond what JSON holds, about 1.8e308)" },
    { name: "an output_schema with a misspelt keyword, at its key (it was said at the schema)", yaml: job("output_schema: {tpye: object}"), path: "jobs.build.output_schema.tpye", line: 6, message: 'is not a JSON Schema keyword; did you mean "type"? (JSON Schema)' },
    { name: "an input_schema whose $ref leads nowhere, in ajv's words", yaml: job("input_schema: {$ref: '#/definitions/nope'}"), path: "jobs.build.input_schema", line: 6, message: "is not a valid JSON Schema: can't resolve reference #/definitions/nope" },
    { name: "an input_schema that is a string", yaml: job("input_schema: object"), path: "jobs.build.input_schema", line: 6, message: "a JSON Schema object" },
    // ajv threw for a meta-schema it was not given: bag check crashed (exit 70).
    {
      name: "an input_schema of a dialect svc does not check",
      yaml: job("input_schema: {$schema: 'https://json-schema.org/draft/2019-09/schema', type: object}"),
      path: 'jobs.build.input_schema["$schema"]',
      line: 6,
      message:
        'svc checks JSON Schema draft-07 ("http://json-schema.org/draft-07/schema#", also when $schema is left out) and 2020-12 ("https://json-schema.org/draft/2020-12/schema"), not "https://json-schema.org/draft/2019-09/schema" (JSON Schema)'
    },
    { name: "an output_schema whose $schema is no string", yaml: job("output_schema: {$schema: 5}"), path: 'jobs.build.output_schema["$schema"]', line: 6, message: "must be a string naming the JSON Schema dialect, not 5 (JSON Schema)" },
    { name: "an input_schema on an action job", yaml: doc("jobs:", "  triage:", "    runs: {using: action, action: triage}", "    input_schema: {type: object}"), path: "jobs.triage.input_schema", line: 6, message: "is not allowed on an action job" },
    { name: "an output_schema on an action job", yaml: doc("jobs:", "  triage:", "    runs: {using: action, action: triage}", "    output_schema: {type: object}"), path: "jobs.triage.output_schema", line: 6, message: "is not allowed on an action job" }
  ])
})

describe("bounded jobs", () => {
  const bounded = (...lines: ReadonlyArray<string>) =>
    doc("bounds:", "  sandbox: {description: d, bound: {deniedTools: [shell]}}", "jobs:", "  tidy:", "    bounds: [sandbox]", ...lines.map((l) => `    ${l}`))

  it.each(["tidy.js", "lib/tidy.mjs"])("accepts a node job running %s", (main) => {
    valid(bounded(`runs: {using: node, main: ${main}}`))
  })

  it("accepts another bag's bound by qualified name", () => {
    valid(doc("jobs:", "  tidy:", "    bounds: ['other:strict']", "    runs: {using: node, main: t.js}"))
  })

  rejects([
    { name: "a bounded TypeScript job", yaml: bounded("runs: {using: node, main: tidy.ts}"), path: "jobs.tidy.runs.main", line: 8, message: "a bounded job must run a single .js or .mjs file" },
    { name: "a bounded process job", yaml: bounded("runs: {using: process, command: [x]}"), path: "jobs.tidy.runs.using", line: 8, message: "a bounded job must use node" },
    { name: "a bounded action job", yaml: bounded("runs: {using: action, action: x}"), path: "jobs.tidy.runs.using", line: 8, message: "a bounded job must use node" },
    { name: "a bounded job with preflight", yaml: bounded("runs: {using: node, main: t.js}", "preflight: {command: x}"), path: "jobs.tidy.preflight", line: 9, message: "is not allowed on a bounded job" },
    { name: "a bounded job with validate", yaml: bounded("runs: {using: node, main: t.js}", "validate: {command: x}"), path: "jobs.tidy.validate", line: 9, message: "is not allowed on a bounded job" },
    { name: "a bound this bag does not declare", yaml: doc("jobs:", "  tidy:", "    bounds: [sandbx]", "    runs: {using: node, main: t.js}"), path: "jobs.tidy.bounds[0]", line: 5, message: 'names bound "sandbx", which this bag does not declare' }
  ])
})

describe("job files", () => {
  const text = doc("jobs:", "  render:", "    runs:", "      using: node", "      main: jobs/render.js", "      working-directory: out")

  it("accepts a main file and working directory that exist", () => {
    valid(text, listing(["jobs/render.js"], ["out"]))
  })

  it("refuses a main file and working directory that do not", () => {
    fails(
      text,
      [
        { path: "jobs.render.runs.main", line: 7, message: "jobs/render.js does not exist in the bag" },
        { path: "jobs.render.runs.working-directory", line: 8, message: "out does not exist in the bag" }
      ],
      { listing: listing(["jobs/other.js"]) }
    )
  })

  it("refuses a main that is a directory", () => {
    fails(text, { path: "jobs.render.runs.main", line: 7, message: "jobs/render.js is a directory, not a file" }, { listing: listing(["jobs/render.js/index.js"], ["out"]) })
  })
})

describe("a misnamed job", () => {
  it("is reported, and its body is still validated", () => {
    fails(doc("jobs:", "  Bad_Name:", "    runs: {using: node}"), [
      { path: "jobs.Bad_Name", line: 4, message: "is not a valid name: use kebab-case" },
      { path: "jobs.Bad_Name.runs.main", line: 5, message: "is required" }
    ])
  })
})
