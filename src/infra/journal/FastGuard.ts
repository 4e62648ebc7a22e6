/**
 * A type guard compiled once from a Schema's AST into plain checks, for the journal's hot read
 * path (replay). It covers the node kinds event payloads use (strings, numbers, booleans,
 * literals, arrays, structs, unions, refinements with their own filters); anything else falls
 * back to `Schema.is`, so the guard never accepts what the schema refuses. Excess properties
 * are allowed, as `Schema.is` allows them: callers keep only the declared fields.
 */
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

type Guard = (u: unknown) => boolean

const OPTIONS: AST.ParseOptions = {}

const compile = (ast: AST.AST): Guard => {
  switch (ast._tag) {
    case "StringKeyword":
      return (u) => typeof u === "string"
    case "NumberKeyword":
      return (u) => typeof u === "number"
    case "BooleanKeyword":
      return (u) => typeof u === "boolean"
    case "Literal": {
      const literal = ast.literal
      return (u) => u === literal
    }
    case "Refinement": {
      const from = compile(ast.from)
      return (u) => from(u) && Option.isNone(ast.filter(u, OPTIONS, ast))
    }
    case "Union": {
      const members = ast.types.map(compile)
      return (u) => members.some((m) => m(u))
    }
    case "TupleType": {
      if (ast.elements.length === 0 && ast.rest.length === 1) {
        const item = compile(ast.rest[0]!.type)
        return (u) => Array.isArray(u) && u.every(item)
      }
      break
    }
    case "TypeLiteral": {
      if (ast.indexSignatures.length === 0) {
        const props = ast.propertySignatures.map((ps) => ({ name: ps.name as string, optional: ps.isOptional, guard: compile(ps.type) }))
        return (u) => {
          if (typeof u !== "object" || u === null || Array.isArray(u)) return false
          const o = u as Record<string, unknown>
          for (const p of props) {
            if (!(p.name in o)) {
              if (p.optional) continue
              return false
            }
            if (!p.guard(o[p.name])) return false
          }
          return true
        }
      }
      break
    }
  }
  const is = Schema.is(Schema.make(ast))
  return (u) => is(u)
}

export const fastGuard = <A, I>(schema: Schema.Schema<A, I>): ((u: unknown) => u is A) => compile(schema.ast) as (u: unknown) => u is A
