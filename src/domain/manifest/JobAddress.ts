/**
 * A versioned job's address, `BAG:JOB@VERSION`, with the job's own `version` (spec: a
 * versioned job is addressed `bag:<name>@<version>`; the bag's own `version` is not branched
 * on). Scopes, `svc run` and advertisements use this form, e.g. `hasher:checksum@1.0.0`.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

export const JOB_ADDRESS = /^([A-Za-z0-9][A-Za-z0-9._-]*):([a-z0-9]+(?:-[a-z0-9]+)*)@([A-Za-z0-9][A-Za-z0-9._+-]*)$/

export class JobAddress extends Schema.Class<JobAddress>("JobAddress")({
  bag: Schema.String,
  job: Schema.String,
  version: Schema.String
}) {
  override toString(): string {
    return formatJobAddress(this)
  }
}

export const formatJobAddress = (a: { readonly bag: string; readonly job: string; readonly version: string }): string =>
  `${a.bag}:${a.job}@${a.version}`

/** The string form on the wire and on the command line, decoded into its parts. */
export const JobAddressFromString = Schema.transformOrFail(Schema.String, JobAddress, {
  strict: true,
  decode: (s, _options, ast) => {
    const m = JOB_ADDRESS.exec(s)
    return m === null
      ? ParseResult.fail(
          new ParseResult.Type(ast, s, `${JSON.stringify(s)} is not a versioned job address BAG:JOB@VERSION (such as hasher:checksum@1.0.0)`)
        )
      : ParseResult.succeed(new JobAddress({ bag: m[1]!, job: m[2]!, version: m[3]! }))
  },
  encode: (a) => ParseResult.succeed(formatJobAddress(a))
})

export const parseJobAddress = (s: string): Either.Either<JobAddress, string> =>
  Either.mapLeft(Schema.decodeUnknownEither(JobAddressFromString)(s), (e) =>
    e.issue._tag === "Transformation" && e.issue.issue._tag === "Type" && e.issue.issue.message !== undefined
      ? e.issue.issue.message
      : `${JSON.stringify(s)} is not a versioned job address BAG:JOB@VERSION`
  )

/** A job's own version as it appears in its address: numbers as written in JSON (`1` for 1). */
export const versionString = (version: string | number): string => String(version)
