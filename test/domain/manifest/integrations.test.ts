/** prompts, mcp-servers, auth, cli, default_notifier, slash-commands, hooks (spec: their tables). */
import { describe, expect, it } from "vitest"
import { listing } from "../../support/manifest.js"
import { doc, fails, valid, type Row } from "./cases.js"

const rejects = (rows: ReadonlyArray<Row>) =>
  it.each(rows)("rejects $name", ({ yaml, path, line, message }) => {
    fails(yaml, { path, line, message })
  })

describe("prompts", () => {
  it("accepts an entry, which must exist when the listing is known", () => {
    const text = doc("prompts:", "  entry: prompts/context.ts")
    expect(valid(text, listing(["prompts/context.ts"])).prompts).toEqual({ entry: "prompts/context.ts" })
    fails(text, { path: "prompts.entry", line: 4, message: "prompts/context.ts does not exist in the bag" }, { listing: listing(["prompts/other.ts"]) })
  })

  rejects([
    { name: "prompts without entry", yaml: doc("prompts: {}"), path: "prompts.entry", line: 3, message: "is required" },
    { name: "an entry outside the bag", yaml: doc("prompts: {entry: ../p.ts}"), path: "prompts.entry", line: 3, message: "must be a relative path inside the bag" },
    { name: "an absolute entry", yaml: doc("prompts: {entry: /p.ts}"), path: "prompts.entry", line: 3, message: "must be a relative path inside the bag" },
    { name: "an unknown key", yaml: doc("prompts: {entry: p.ts, budget: 5}"), path: "prompts.budget", line: 3, message: 'unknown key "budget"' },
    { name: "prompts as a string", yaml: doc("prompts: p.ts"), path: "prompts", line: 3, message: "must be a map" }
  ])
})

describe("mcp-servers", () => {
  it("accepts url servers, command servers and both", () => {
    const m = valid(
      doc(
        "mcp-servers:",
        "  remote: {type: http, url: 'https://mcp.example.com'}",
        "  local: {command: npx, args: [-y, server], env: [API_TOKEN], session-scoped: true}",
        "  both: {url: 'http://localhost:9000', command: serve}"
      )
    )
    expect(Object.keys(m["mcp-servers"] ?? {})).toEqual(["remote", "local", "both"])
  })

  rejects([
    { name: "a server with neither url nor command", yaml: doc("mcp-servers:", "  s: {args: [x]}"), path: "mcp-servers.s", line: 4, message: "declares neither url nor command" },
    { name: "type without url", yaml: doc("mcp-servers:", "  s: {type: http, command: x}"), path: "mcp-servers.s.type", line: 4, message: "is the transport of a url server; set url" },
    { name: "an unknown type", yaml: doc("mcp-servers:", "  s: {type: sse, url: x}"), path: "mcp-servers.s.type", line: 4, message: "must be one of http" },
    { name: "env with a lower-case name", yaml: doc("mcp-servers:", "  s: {command: x, env: [token]}"), path: "mcp-servers.s.env[0]", line: 4, message: "an environment variable name" },
    { name: "args as a string", yaml: doc("mcp-servers:", "  s: {command: x, args: '-y'}"), path: "mcp-servers.s.args", line: 4, message: "must be a list" },
    { name: "session-scoped as a string", yaml: doc("mcp-servers:", "  s: {command: x, session-scoped: 'yes'}"), path: "mcp-servers.s.session-scoped", line: 4, message: "must be true or false" },
    { name: "an unknown key", yaml: doc("mcp-servers:", "  s:", "    command: x", "    headers: {}"), path: "mcp-servers.s.headers", line: 6, message: 'unknown key "headers"' }
  ])
})

describe("auth", () => {
  it("accepts command, args and check", () => {
    expect(valid(doc("auth:", "  command: gh", "  args: [auth, login]", "  check: {command: gh, args: [auth, status]}")).auth).toEqual({
      command: "gh",
      args: ["auth", "login"],
      check: { command: "gh", args: ["auth", "status"] }
    })
  })

  rejects([
    { name: "auth without command", yaml: doc("auth:", "  args: [login]"), path: "auth.command", line: 4, message: "is required" },
    { name: "a check without command", yaml: doc("auth:", "  command: gh", "  check: {args: [x]}"), path: "auth.check.command", line: 5, message: "is required" },
    { name: "an unknown check key", yaml: doc("auth:", "  command: gh", "  check: {command: gh, expect: 0}"), path: "auth.check.expect", line: 5, message: 'unknown key "expect"' },
    { name: "args as a string", yaml: doc("auth:", "  command: gh", "  args: login"), path: "auth.args", line: 5, message: "must be a list" },
    { name: "an unknown key", yaml: doc("auth:", "  command: gh", "  url: x"), path: "auth.url", line: 5, message: 'unknown key "url"' }
  ])
})

describe("cli", () => {
  it("accepts an alias and an empty cli", () => {
    expect(valid(doc("cli: {alias: dm}")).cli).toEqual({ alias: "dm" })
    expect(valid(doc("cli: {}")).cli).toEqual({})
  })

  rejects([
    { name: "an alias that is a number", yaml: doc("cli: {alias: 5}"), path: "cli.alias", line: 3, message: "must be a string, not the number 5" },
    { name: "an unknown key", yaml: doc("cli: {alias: dm, hidden: true}"), path: "cli.hidden", line: 3, message: 'unknown key "hidden"' }
  ])
})

describe("default_notifier", () => {
  it("accepts tool with and without target", () => {
    expect(valid(doc("default_notifier: {tool: notify}")).default_notifier).toEqual({ tool: "notify" })
    expect(valid(doc("default_notifier: {tool: notify, target: '#ops'}")).default_notifier).toEqual({ tool: "notify", target: "#ops" })
  })

  rejects([
    { name: "a notifier without tool", yaml: doc("default_notifier: {target: x}"), path: "default_notifier.tool", line: 3, message: "is required" },
    { name: "an unknown key", yaml: doc("default_notifier: {tool: t, channel: x}"), path: "default_notifier.channel", line: 3, message: 'unknown key "channel"' }
  ])
})

describe("slash-commands", () => {
  const good = doc("slash-commands:", "  entry: slash.ts", "  commands:", "    - {name: deploy, description: Deploy it}")

  it("accepts entry and commands, the entry existing in the bag", () => {
    expect(valid(good, listing(["slash.ts"]))["slash-commands"]?.commands).toEqual([{ name: "deploy", description: "Deploy it" }])
    fails(good, { path: "slash-commands.entry", line: 4, message: "slash.ts does not exist in the bag" }, { listing: listing([]) })
  })

  rejects([
    { name: "no entry", yaml: doc("slash-commands:", "  commands: [{name: a, description: b}]"), path: "slash-commands.entry", line: 4, message: "is required" },
    { name: "no commands", yaml: doc("slash-commands:", "  entry: s.ts"), path: "slash-commands.commands", line: 4, message: "is required" },
    { name: "an empty commands list", yaml: doc("slash-commands:", "  entry: s.ts", "  commands: []"), path: "slash-commands.commands", line: 5, message: "must list at least one command" },
    { name: "a command without description", yaml: doc("slash-commands:", "  entry: s.ts", "  commands: [{name: a}]"), path: "slash-commands.commands[0].description", line: 5, message: "is required" },
    { name: "a command with an unknown key", yaml: doc("slash-commands:", "  entry: s.ts", "  commands: [{name: a, description: b, usage: c}]"), path: "slash-commands.commands[0].usage", line: 5, message: 'unknown key "usage"' }
  ])
})

describe("hooks", () => {
  it("accepts the map form with agent and barry hooks", () => {
    const m = valid(
      doc(
        "hooks:",
        "  agent:",
        "    - {event: session-start, run: hooks/start.sh}",
        "    - {event: session-end, run: hooks/end.sh, timeout: 30}",
        "    - {event: user-prompt, run: hooks/prompt.sh, args: [--quiet]}",
        "    - {event: stop, run: hooks/stop.sh, cursor-events: [stop]}",
        "    - {event: pre-tool, run: hooks/pre.sh, matcher: 'Bash|Edit', cursor-matcher: shell}",
        "    - {event: post-tool, run: hooks/post.sh, timeout: 60}",
        "  barry:",
        "    - {event: event-created, run: hooks/record.sh, args: [a], timeout: 10}"
      )
    )
    expect(m.hooks).toMatchObject({ agent: expect.any(Array), barry: [{ event: "event-created" }] })
  })

  it("accepts a bare list as the agent hooks", () => {
    expect(valid(doc("hooks:", "  - {event: stop, run: hooks/stop.sh}")).hooks).toEqual([{ event: "stop", run: "hooks/stop.sh" }])
  })

  it.each([
    ["the map form", doc("hooks:", "  agent:", "    - {event: stop, run: hooks/stop.sh}"), "hooks.agent[0].run", 5],
    ["the list form", doc("hooks:", "  - {event: stop, run: hooks/stop.sh}"), "hooks[0].run", 4],
    ["a record hook", doc("hooks:", "  barry:", "    - {event: event-created, run: hooks/stop.sh}"), "hooks.barry[0].run", 5]
  ])("checks that the run script of %s exists", (_what, text, path, line) => {
    valid(text, listing(["hooks/stop.sh"]))
    fails(text, { path, line, message: "hooks/stop.sh does not exist in the bag" }, { listing: listing([]) })
  })

  rejects([
    { name: "an unknown agent event", yaml: doc("hooks:", "  - {event: pre-commit, run: h.sh}"), path: "hooks[0].event", line: 4, message: "must be one of session-start, session-end, user-prompt, stop, pre-tool, post-tool" },
    { name: "a hook without run", yaml: doc("hooks:", "  agent:", "    - {event: stop}"), path: "hooks.agent[0].run", line: 5, message: "is required" },
    { name: "a hook without event", yaml: doc("hooks:", "  - {run: h.sh}"), path: "hooks[0].event", line: 4, message: "is required" },
    { name: "a matcher on a non-tool event", yaml: doc("hooks:", "  - {event: stop, run: h.sh, matcher: Bash}"), path: "hooks[0].matcher", line: 4, message: "applies only to pre-tool and post-tool hooks" },
    { name: "a timeout that is not a number of seconds", yaml: doc("hooks:", "  - {event: stop, run: h.sh, timeout: 1m}"), path: "hooks[0].timeout", line: 4, message: "seconds as a number, such as 5" },
    { name: "a run script outside the bag", yaml: doc("hooks:", "  - {event: stop, run: /bin/sh}"), path: "hooks[0].run", line: 4, message: "must be a relative path inside the bag" },
    { name: "an unknown agent hook key", yaml: doc("hooks:", "  - {event: stop, run: h.sh, when: always}"), path: "hooks[0].when", line: 4, message: 'unknown key "when"' },
    { name: "a record hook with an agent event", yaml: doc("hooks:", "  barry:", "    - {event: session-start, run: h.sh}"), path: "hooks.barry[0].event", line: 5, message: "must be one of event-created" },
    { name: "a record hook with a matcher", yaml: doc("hooks:", "  barry:", "    - {event: event-created, run: h.sh, matcher: x}"), path: "hooks.barry[0].matcher", line: 5, message: 'unknown key "matcher"' },
    { name: "an unknown hook family", yaml: doc("hooks:", "  git: []"), path: "hooks.git", line: 4, message: 'unknown key "git"' },
    { name: "hooks as a string", yaml: doc("hooks: h.sh"), path: "hooks", line: 3, message: "a map with agent and barry lists, or a list of agent hooks" }
  ])
})
