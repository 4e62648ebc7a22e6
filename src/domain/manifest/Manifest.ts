/**
 * The whole `bag.yaml` schema (spec: bag-manifest.md, "Top-level keys"), strict: decoding runs
 * with `onExcessProperty: "error"`, so an unknown key anywhere rejects the manifest. The only
 * open subtrees are named in docs/manifest.md: `constants` values, retired `verbs`/`nouns`,
 * JSON Schema contents, `bound` keys beyond the two shown, inline schedule actions.
 */
import * as Schema from "effect/Schema"
import { BagName } from "./Formats.js"
import { NonEmpty, opt, Str } from "./internal/schemaKit.js"
import { Apps } from "./schema/Apps.js"
import { Bags, Dependencies, Requirement } from "./schema/Composition.js"
import { Bounds, Credentials, Permission, Tools, Traits } from "./schema/Grants.js"
import { Infra, Provides } from "./schema/Hosting.js"
import { Auth, Cli, DefaultNotifier, Hooks, McpServers, Prompts, SlashCommands } from "./schema/Integrations.js"
import { Jobs } from "./schema/Jobs.js"
import { Scripts, Services } from "./schema/Processes.js"
import { Schedules } from "./schema/Schedules.js"
import { Store, StoreHooks, Stores } from "./schema/Stores.js"
import { Vendors } from "./schema/Vendors.js"

/** The bag's description: one line, as `svc bag list` and `show` print it (spec); a block's final line break is fine. */
const OneLine = NonEmpty.pipe(Schema.filter((s) => !/[\n\r]/.test(s.trimEnd()) || "must be one line (svc bag list shows it on one): put longer text in instructions"))

export const Manifest = Schema.Struct({
  name: BagName,
  description: OneLine,
  version: opt(NonEmpty),
  extends: opt(BagName),
  instructions: opt(Str),
  bags: opt(Bags),
  requires: opt(Schema.Record({ key: BagName, value: Requirement })),
  dependencies: opt(Dependencies),
  permissions: opt(Schema.Array(Permission)),
  tools: opt(Tools),
  prompts: opt(Prompts),
  traits: opt(Traits),
  bounds: opt(Bounds),
  constants: opt(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  credentials: opt(Credentials),
  vendors: opt(Vendors),
  "mcp-servers": opt(McpServers),
  auth: opt(Auth),
  cli: opt(Cli),
  default_notifier: opt(DefaultNotifier),
  "slash-commands": opt(SlashCommands),
  hooks: opt(Hooks),
  store: opt(Store),
  stores: opt(Stores),
  snapshots: opt(StoreHooks),
  restores: opt(StoreHooks),
  services: opt(Services),
  apps: opt(Apps),
  jobs: opt(Jobs),
  schedules: opt(Schedules),
  scripts: opt(Scripts),
  infra: opt(Infra),
  provides: opt(Provides)
})

/** The decoded manifest: the typed value the rest of svc uses (jobs, schedules, services...). */
export type Manifest = typeof Manifest.Type

/** Keys of the manifest format, in the spec's order. */
export const TOP_LEVEL_KEYS: ReadonlyArray<string> = Object.keys(Manifest.fields)

/** Retired keys: accepted and ignored (spec, rule 7). */
export const RETIRED_KEYS = ["verbs", "nouns"] as const

/**
 * Removed keys, rejected with the key that replaced them. `tool-metadata` became the tool
 * metadata list under `tools` (only a remote bag serves it); `deployments` became `services`
 * (processes the service manager runs) together with a provider bag's `provides` for routes.
 */
export const REPLACED_KEYS: Readonly<Record<string, string>> = {
  "tool-metadata":
    "`tool-metadata` was removed: tool visibility is set under `tools`, and tool metadata is served only by a remote bag over the tool protocol",
  deployments:
    "`deployments` was removed: declare long-running processes under `services` (a provider bag's `provides` hosts their routes)"
}

/** What an extension may declare (spec, "extends"); everything else belongs to the parent. */
export const EXTENSION_KEYS: ReadonlyArray<string> = [
  "name",
  "extends",
  "description",
  "version",
  "instructions",
  "tools",
  "dependencies",
  "schedules",
  "scripts"
]
