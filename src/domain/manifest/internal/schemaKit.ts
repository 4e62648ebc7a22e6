/**
 * Small building blocks for the manifest schema. Everything here is an Effect `Schema`; the
 * helpers only fix how optional keys behave (exact: an absent key stays absent) and give the
 * messages a person writing YAML understands ("must be a string, not a list").
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as AST from "effect/SchemaAST"
import { describeValue } from "../Problem.js"

/** Optional key: absent stays absent (no `undefined` member, no "Expected undefined" noise). */
export const opt = <S extends Schema.Schema.All>(schema: S) => Schema.optionalWith(schema, { exact: true })

/** Optional key with the spec's default, filled in the decoded value. */
export const withDefault = <S extends Schema.Schema.Any>(schema: S, value: () => Schema.Schema.Type<S>) =>
  Schema.optionalWith(schema, { exact: true, default: value as any })

export const Str = Schema.String
export const NonEmpty = Schema.String.pipe(Schema.filter((s) => s.trim().length > 0 || "must not be empty"))
export const Bool = Schema.Boolean
export const Num = Schema.Number.pipe(Schema.filter((n) => Number.isFinite(n) || "must be a finite number"))
export const StrList = Schema.Array(NonEmpty)

/** A list that must hold at least one item, said in the manifest's words. */
export const nonEmptyList = <S extends Schema.Schema.Any>(item: S, what: string) =>
  Schema.Array(item).pipe(Schema.filter((a) => a.length > 0 || `must list at least one ${what}`))

export const matching = (pattern: RegExp, what: string) =>
  Schema.String.pipe(Schema.filter((s) => pattern.test(s) || what))

/** A closed set of strings, with the allowed values in the message. */
export const oneOfValues = <const L extends ReadonlyArray<string>>(...values: L) =>
  Schema.Literal(...values).annotations({
    message: (issue) => ({
      message: `must be one of ${values.join(", ")}, not ${describeValue(issue.actual)}`,
      override: true
    })
  })

type Kind = "string" | "number" | "boolean" | "null" | "list" | "map"

export const kindOf = (u: unknown): Kind | undefined => {
  if (u === null) return "null"
  if (Array.isArray(u)) return "list"
  switch (typeof u) {
    case "string":
      return "string"
    case "number":
      return "number"
    case "boolean":
      return "boolean"
    case "object":
      return "map"
    default:
      return undefined
  }
}

type Members = { readonly [K in Kind]?: Schema.Schema<any, any, never> }
type TypeOfMembers<M extends Members> = { [K in keyof M]: M[K] extends Schema.Schema<infer A, any, never> ? A : never }[keyof M]

type Decoder = (u: unknown, o?: AST.ParseOptions) => Either.Either<any, ParseResult.ParseIssue>
const decoders = new WeakMap<Schema.Schema<any, any, never>, Decoder>()
const decoderOf = (schema: Schema.Schema<any, any, never>): Decoder => {
  let decoder = decoders.get(schema)
  if (decoder === undefined) {
    decoder = ParseResult.decodeUnknownEither(schema)
    decoders.set(schema, decoder)
  }
  return decoder
}

/**
 * A value whose schema depends on what it is: `pick` chooses the one schema to decode with,
 * or none (then the value is reported as not `expected`). Unlike `Schema.Union`, only the
 * chosen schema reports, so a map with one bad key reports that key, not every alternative.
 */
export const choose = <A>(
  expected: string,
  pick: (input: unknown) => Schema.Schema<any, any, never> | undefined
): Schema.Schema<A, unknown> =>
  Schema.declare(
    [],
    {
      decode: () => (input, options, ast) => {
        const schema = pick(input)
        if (schema === undefined) {
          return ParseResult.fail(new ParseResult.Type(ast, input, `must be ${expected}, not ${describeValue(input)}`))
        }
        return decoderOf(schema)(input, options)
      },
      encode: () => (input) => ParseResult.succeed(input)
    },
    { description: expected }
  ) as any

/** `bags` is a list or a map; `hooks` a map or a list: the member is chosen by the value's kind. */
export const byKind = <M extends Members>(expected: string, members: M): Schema.Schema<TypeOfMembers<M>, unknown> =>
  choose(expected, (input) => {
    const kind = kindOf(input)
    return kind === undefined ? undefined : members[kind]
  })

export const isMap = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** A key that may not appear where it is written, with the reason as its message. */
export const forbidden = (message: string): Schema.Schema<never, unknown> =>
  Schema.declare([], {
    decode: () => (input, _options, ast) => ParseResult.fail(new ParseResult.Type(ast, input, message)),
    encode: () => (input, _options, ast) => ParseResult.fail(new ParseResult.Type(ast, input, message))
  }) as any
