/** How a bag plugs into sessions and tools: prompts, mcp-servers, auth, cli, notifier, slash commands, hooks. */
import * as Schema from "effect/Schema"
import { BagPath, EnvVarName } from "../Formats.js"
import { Bool, byKind, nonEmptyList, NonEmpty, oneOfValues, opt, StrList } from "../internal/schemaKit.js"

export const Prompts = Schema.Struct({ entry: BagPath })

export const McpServer = Schema.Struct({
  type: opt(oneOfValues("http")),
  url: opt(NonEmpty),
  command: opt(NonEmpty),
  args: opt(Schema.Array(Schema.String)),
  env: opt(Schema.Array(EnvVarName)),
  "session-scoped": opt(Bool)
})
export const McpServers = Schema.Record({ key: NonEmpty, value: McpServer })

export const Auth = Schema.Struct({
  command: NonEmpty,
  args: opt(Schema.Array(Schema.String)),
  check: opt(Schema.Struct({ command: NonEmpty, args: opt(Schema.Array(Schema.String)) }))
})

export const Cli = Schema.Struct({ alias: opt(NonEmpty) })

export const DefaultNotifier = Schema.Struct({ tool: NonEmpty, target: opt(NonEmpty) })

export const SlashCommands = Schema.Struct({
  entry: BagPath,
  commands: nonEmptyList(Schema.Struct({ name: NonEmpty, description: NonEmpty }), "command")
})

export const AGENT_EVENTS = ["session-start", "session-end", "user-prompt", "stop", "pre-tool", "post-tool"] as const

/** A hook's `timeout`: seconds, as a number (spec: "number, seconds per run"; not `5s` as a job's). */
const HookSeconds = byKind("seconds as a number, such as 5 (a hook's timeout takes no unit)", { number: Schema.Number }).pipe(
  Schema.filter((n) => (!Number.isFinite(n) ? "must be a finite number of seconds" : n > 0 || "must be more than 0 seconds"))
)

export const AgentHook = Schema.Struct({
  event: oneOfValues(...AGENT_EVENTS),
  run: BagPath,
  args: opt(Schema.Array(Schema.String)),
  matcher: opt(NonEmpty),
  "cursor-matcher": opt(NonEmpty),
  "cursor-events": opt(StrList),
  timeout: opt(HookSeconds)
})

/** Record hooks; the manifest spells the key `barry`. */
export const RecordHook = Schema.Struct({
  event: oneOfValues("event-created"),
  run: BagPath,
  args: opt(Schema.Array(Schema.String)),
  timeout: opt(HookSeconds)
})

/** A bare list is a permanent second spelling of `agent`. */
export const Hooks = byKind("a map with agent and barry lists, or a list of agent hooks", {
  list: Schema.Array(AgentHook),
  map: Schema.Struct({ agent: opt(Schema.Array(AgentHook)), barry: opt(Schema.Array(RecordHook)) })
})
