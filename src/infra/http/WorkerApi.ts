/**
 * The worker route declared as an HttpApi, from the same Schemas the handler decodes with:
 * the contract, and the source of docs/openapi.json (`npm run openapi`; a test keeps the
 * committed document equal to this declaration).
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { RefusalCode, WorkerRequest, WorkerResponse } from "../../app/workers/Protocol.js"
import { SuccessionAnswer, SuccessionRequest } from "../tls/Succession.js"

const refusal = (identifier: string, description: string) =>
  Schema.Struct({
    code: RefusalCode,
    message: Schema.String,
    stopAll: Schema.optionalWith(Schema.Boolean, { exact: true })
  }).annotations({ identifier, description })

/** Bearer: the join token for `join`, none for `succession`, the worker credential (svc_wk_...) for every other kind. */
export class WorkerBearer extends HttpApiMiddleware.Tag<WorkerBearer>()("WorkerBearer", {
  security: { bearer: HttpApiSecurity.bearer }
}) {}

export const WorkerApi = HttpApi.make("svc-worker-route")
  .add(
    HttpApiGroup.make("worker")
      .add(
        HttpApiEndpoint.post("call", "/api/worker")
          .setPayload(Schema.Union(WorkerRequest, SuccessionRequest))
          .addSuccess(Schema.Union(WorkerResponse, SuccessionAnswer))
          .addError(refusal("BadRequest", "the body is not UTF-8, not JSON, names a key twice in one object, holds a secret-shaped string where it would be recorded, or is not a worker message (strict: unknown fields are refused)"), { status: 400 })
          .addError(refusal("Unauthenticated", "no, malformed, unknown or expired bearer; also any route but this one presented a worker credential"), { status: 401 })
          .addError(refusal("Forbidden", "join-refused (token redeemed, expired or withdrawn, or a name that is not a worker name), revoked (stopAll: true), out-of-scope (an attempt of a job outside the worker's scope)"), { status: 403 })
          .addError(refusal("UnknownActivity", "decline, report or output for an attempt not placed on this worker"), { status: 404 })
          .addError(refusal("Conflict", "fenced: the call carries an older fence (another process took the session over); superseded: a report or decline for an attempt that no longer counts (its activity was placed again)"), { status: 409 })
          .addError(refusal("PayloadTooLarge", "the body is over 64 KiB"), { status: 413 })
          .addError(refusal("UnsupportedMediaType", "the body is not sent as application/json, or names another charset than UTF-8"), { status: 415 })
          .addError(
            Schema.Struct({ code: Schema.Literal("starting"), message: Schema.String }).annotations({
              identifier: "Starting",
              description: "svc serve has not read its journal yet (it listens first, so that a port in use is said at once): call again after Retry-After (1 s)"
            }),
            { status: 503 }
          )
          .annotate(OpenApi.Summary, "Every call a worker makes: join, hello, advertise, heartbeat, claim, decline, report; and, with no credential, succession (the owner's signed changes of certificate)")
      )
      .middleware(WorkerBearer)
  )
  .annotate(OpenApi.Title, "svc worker route")
  .annotate(OpenApi.Version, "1")

/**
 * The document, without the decode error HttpApi declares for every API: the route answers a body
 * it cannot decode with its own refusal (`{code: "bad-request", message}`), never that shape.
 */
export const openApiDocument = () => {
  const doc = OpenApi.fromApi(WorkerApi)
  const badRequest = doc.paths["/api/worker"]?.post?.responses?.[400] as { content?: { "application/json"?: { schema?: { anyOf?: ReadonlyArray<{ $ref?: string }> } } } } | undefined
  const schema = badRequest?.content?.["application/json"]?.schema
  const own = schema?.anyOf?.filter((s) => s.$ref !== "#/components/schemas/HttpApiDecodeError")
  if (schema !== undefined && own !== undefined && own.length === 1) {
    delete schema.anyOf
    Object.assign(schema, own[0])
  }
  const schemas = doc.components.schemas as Record<string, unknown>
  delete schemas["HttpApiDecodeError"]
  // The shapes only it referred to (its issues) go with it.
  for (let dropped = true; dropped; ) {
    dropped = false
    for (const name of Object.keys(schemas)) {
      const elsewhere = JSON.stringify({ paths: doc.paths, schemas: Object.entries(schemas).filter(([k]) => k !== name) })
      if (!elsewhere.includes(`"#/components/schemas/${name}"`)) {
        delete schemas[name]
        dropped = true
      }
    }
  }
  return doc
}
