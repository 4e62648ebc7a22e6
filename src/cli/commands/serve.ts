/** `svc serve`: the runtime in the foreground (owner route, admin API, links to owners). */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { serve } from "../../infra/runtime/Serve.js"
import * as ServeLogger from "../../infra/runtime/ServeLogger.js"
import { SvcHome } from "../../infra/SvcHome.js"
import { exitQuietly, refused, usage } from "../CliFailure.js"

const listen = Options.text("listen").pipe(
  Options.withDefault("127.0.0.1:7443"),
  Options.withDescription("HOST:PORT the worker route listens on (loopback by default; port 0 picks a free one)")
)
const publicUrl = Options.text("public-url").pipe(Options.optional, Options.withDescription("the https:// address workers use, written into join tokens"))
const tlsCert = Options.file("tls-cert").pipe(Options.optional, Options.withDescription("PEM certificate (default: generated at first start in $SVC_HOME/tls)"))
const tlsKey = Options.file("tls-key").pipe(Options.optional, Options.withDescription("PEM private key for --tls-cert"))
const restored = Options.boolean("restored").pipe(
  Options.withDescription("go on from a journal older than the one this owner wrote (a backup restored), revoking again the workers and invites closed since (docs/operations.md)")
)

export const parseListen = (text: string): { host: string; port: number } | undefined => {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text)
  if (m === null) return undefined
  const port = Number(m[3])
  return port <= 65535 ? { host: m[1] ?? m[2]!, port } : undefined
}

export const serveCommand = Command.make("serve", { listen, publicUrl, tlsCert, tlsKey, restored }, (o) =>
  Effect.gen(function* () {
    const address = parseListen(o.listen)
    if (address === undefined) return yield* usage(`--listen takes HOST:PORT, such as 127.0.0.1:7443, not ${JSON.stringify(o.listen)}`)
    if (Option.isSome(o.tlsCert) !== Option.isSome(o.tlsKey)) return yield* usage("--tls-cert and --tls-key go together")
    const url = Option.getOrUndefined(o.publicUrl)
    // A trailing slash is the same address; a user and password would go into every join token and the log.
    const given = url?.replace(/\/+$/, "")
    if (given !== undefined && !/^https:\/\/[^/@]+$/.test(given)) {
      return yield* usage(`--public-url takes https://HOST[:PORT]${given.includes("@") ? " (no user or password: workers authenticate with their credential)" : `, not ${JSON.stringify(url)}`}`)
    }
    const home = (yield* SvcHome).path
    yield* serve({
      home,
      host: address.host,
      port: address.port,
      publicUrl: given,
      tls: Option.isSome(o.tlsCert) && Option.isSome(o.tlsKey) ? { certFile: o.tlsCert.value, keyFile: o.tlsKey.value } : undefined,
      restored: o.restored
    }).pipe(Effect.mapError((e) => (e.logged === true ? exitQuietly(1) : refused(e.message))), Effect.provide(ServeLogger.layer))
  })
).pipe(Command.withDescription("Run the runtime in the foreground: the owner's worker route, the admin API, links to owners (stop with Ctrl-C)"))
