/** services and scripts (spec: their tables; exactly one of entry or command). */
import { describe, expect, it } from "vitest"
import { listing } from "../../support/manifest.js"
import { doc, fails, valid, type Row } from "./cases.js"

const rejects = (rows: ReadonlyArray<Row>) =>
  it.each(rows)("rejects $name", ({ yaml, path, line, message }) => {
    fails(yaml, { path, line, message })
  })

describe("services", () => {
  it("accepts a minimal service and defaults autostart to login", () => {
    expect(valid(doc("services:", "  web: {description: serves pages, entry: server.ts}")).services?.["web"]).toEqual({
      description: "serves pages",
      entry: "server.ts",
      autostart: "login"
    })
  })

  it("accepts every key", () => {
    const m = valid(
      doc(
        "services:",
        "  api:",
        "    description: the API",
        "    command: bin/api",
        "    args: [--port, '0']",
        "    env: [MODE=prod, EMPTY=]",
        "    secrets: [DB_PASSWORD]",
        "    optional-secrets: [SENTRY_DSN]",
        "    working-directory: srv",
        "    autostart: manual",
        "    serves: http",
        "    health: /healthz",
        "    user: _svcapi",
        "    local-only: true",
        "  sock:",
        "    description: a socket service",
        "    entry: sock.js",
        "    socket: api.sock",
        "    health: /ready",
        "    local-only: false"
      )
    )
    expect(m.services?.["api"]?.autostart).toBe("manual")
    expect(m.services?.["sock"]?.autostart).toBe("login")
  })

  rejects([
    { name: "both entry and command", yaml: doc("services:", "  web: {description: d, entry: s.js, command: node}"), path: "services.web", line: 4, message: "needs exactly one way to start it: entry, command; found entry and command" },
    { name: "neither entry nor command", yaml: doc("services:", "  web: {description: d}"), path: "services.web", line: 4, message: "needs exactly one way to start it: entry, command; none is set" },
    { name: "a service without description", yaml: doc("services:", "  web: {entry: s.js}"), path: "services.web.description", line: 4, message: "is required" },
    { name: "an unknown autostart", yaml: doc("services:", "  web: {description: d, entry: s.js, autostart: boot}"), path: "services.web.autostart", line: 4, message: "must be one of login, manual" },
    { name: "an unknown protocol", yaml: doc("services:", "  web: {description: d, entry: s.js, serves: grpc}"), path: "services.web.serves", line: 4, message: "must be one of http" },
    { name: "health without serves or socket", yaml: doc("services:", "  web: {description: d, entry: s.js, health: /h}"), path: "services.web.health", line: 4, message: "needs serves or socket" },
    { name: "local-only without serves or socket", yaml: doc("services:", "  web: {description: d, entry: s.js, local-only: true}"), path: "services.web.local-only", line: 4, message: "needs serves or socket" },
    { name: "local-only as a string", yaml: doc("services:", "  web: {description: d, entry: s.js, serves: http, local-only: 'true'}"), path: "services.web.local-only", line: 4, message: "must be true or false" },
    { name: "a user without a leading underscore", yaml: doc("services:", "  web: {description: d, entry: s.js, user: svc}"), path: "services.web.user", line: 4, message: "starting with an underscore" },
    { name: "an env item that is not KEY=VALUE", yaml: doc("services:", "  web: {description: d, entry: s.js, env: [MODE]}"), path: "services.web.env[0]", line: 4, message: "must be a KEY=VALUE literal" },
    { name: "args as a string", yaml: doc("services:", "  web: {description: d, command: x, args: '-v'}"), path: "services.web.args", line: 4, message: "must be a list" },
    { name: "an entry outside the bag", yaml: doc("services:", "  web: {description: d, entry: ../s.js}"), path: "services.web.entry", line: 4, message: "must be a relative path inside the bag" },
    { name: "a working-directory outside the bag", yaml: doc("services:", "  web: {description: d, entry: s.js, working-directory: /tmp}"), path: "services.web.working-directory", line: 4, message: "must be a relative path inside the bag" },
    { name: "an empty command", yaml: doc("services:", "  web: {description: d, command: ''}"), path: "services.web.command", line: 4, message: "must not be empty" },
    { name: "an unknown key", yaml: doc("services:", "  web:", "    description: d", "    entry: s.js", "    port: 8080"), path: "services.web.port", line: 7, message: 'unknown key "port"' },
    { name: "a service that is not a map", yaml: doc("services:", "  web: node s.js"), path: "services.web", line: 4, message: "must be a map" }
  ])

  it("checks the entry and working-directory against the listing", () => {
    const text = doc("services:", "  web:", "    description: d", "    entry: srv/main.ts", "    working-directory: srv/data")
    valid(text, listing(["srv/main.ts"], ["srv/data"]))
    fails(
      text,
      [
        { path: "services.web.entry", line: 6, message: "srv/main.ts does not exist in the bag" },
        { path: "services.web.working-directory", line: 7, message: "srv/data does not exist in the bag" }
      ],
      { listing: listing([]) }
    )
  })
})

describe("scripts", () => {
  it("accepts entry scripts and command scripts", () => {
    const m = valid(
      doc(
        "scripts:",
        "  seed: {description: seeds, entry: scripts/seed.ts, args: [--fast], env: [A=1], secrets: [TOKEN]}",
        "  tidy: {description: tidies, command: rm, args: [-rf, tmp], working-directory: work}"
      )
    )
    expect(m.scripts?.["tidy"]).toEqual({ description: "tidies", command: "rm", args: ["-rf", "tmp"], "working-directory": "work" })
  })

  rejects([
    { name: "both entry and command", yaml: doc("scripts:", "  go: {description: d, entry: a.ts, command: ls}"), path: "scripts.go", line: 4, message: "found entry and command" },
    { name: "neither entry nor command", yaml: doc("scripts:", "  go: {description: d, args: [x]}"), path: "scripts.go", line: 4, message: "none is set" },
    { name: "a script without description", yaml: doc("scripts:", "  go: {command: ls}"), path: "scripts.go.description", line: 4, message: "is required" },
    { name: "a service-only key", yaml: doc("scripts:", "  go: {description: d, command: ls, autostart: manual}"), path: "scripts.go.autostart", line: 4, message: 'unknown key "autostart"' },
    { name: "secrets with an empty name", yaml: doc("scripts:", "  go: {description: d, command: ls, secrets: ['']}"), path: "scripts.go.secrets[0]", line: 4, message: "must not be empty" },
    { name: "env that is a map", yaml: doc("scripts:", "  go: {description: d, command: ls, env: {A: 1}}"), path: "scripts.go.env", line: 4, message: "must be a list" }
  ])

  it("reports both services and scripts lacking a way to start, each once", () => {
    fails(doc("services:", "  a: {description: d}", "scripts:", "  b: {description: d}"), [
      { path: "services.a", line: 4, message: "none is set" },
      { path: "scripts.b", line: 6, message: "none is set" }
    ])
  })

  it("checks the entry and working-directory against the listing", () => {
    const text = doc("scripts:", "  go:", "    description: d", "    entry: go.mjs", "    working-directory: out")
    valid(text, listing(["go.mjs"], ["out"]))
    fails(
      text,
      [
        { path: "scripts.go.entry", line: 6, message: "go.mjs does not exist" },
        { path: "scripts.go.working-directory", line: 7, message: "out does not exist" }
      ],
      { listing: listing([]) }
    )
  })
})
