/**
 * A strict guard compiled once from a Schema's AST, for the worker route's hot path: it
 * answers true only for a value that the route's strict decoder (`onExcessProperty: "error"`)
 * would accept and give back unchanged. So a call whose body passes it skips the decoder, and
 * any other body (wrong, or only unusual) still goes through the decoder, which accepts it or
 * names what is wrong. The guard may say false where the decoder would accept; it must never
 * say true where the decoder would refuse or transform (a property test holds it to this).
 *
 * Covered: string, number, boolean, literal and unknown keywords, refinements (their own
 * filters), unions, arrays, and structs without index signatures, whose every own key must be
 * declared. Any other node (a transformation, a declaration, a tuple with fixed elements)
 * makes the guard answer false, leaving the decision to the decoder.
 */
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

type Guard = (u: unknown) => boolean

const OPTIONS: AST.ParseOptions = {}
const never: Guard = () => false

const compile = (ast: AST.AST): Guard => {
  switch (ast._tag) {
    case "StringKeyword":
      return (u) => typeof u === "string"
    case "NumberKeyword":
      // The decoder accepts NaN and the infinities too; JSON cannot carry them.
      return (u) => typeof u === "number"
    case "BooleanKeyword":
      return (u) => typeof u === "boolean"
    case "UnknownKeyword":
    case "AnyKeyword":
      return () => true
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
      return (u) => {
        for (const m of members) if (m(u)) return true
        return false
      }
    }
    case "TupleType": {
      if (ast.elements.length === 0 && ast.rest.length === 1) {
        const item = compile(ast.rest[0]!.type)
        return (u) => {
          if (!Array.isArray(u)) return false
          for (let i = 0; i < u.length; i++) if (!item(u[i])) return false
          return true
        }
      }
      return never
    }
    case "TypeLiteral": {
      if (ast.indexSignatures.length > 0 || !ast.propertySignatures.every((ps) => typeof ps.name === "string")) return never
      const props = ast.propertySignatures.map((ps) => ({ name: ps.name as string, optional: ps.isOptional, guard: compile(ps.type) }))
      return (u) => {
        if (typeof u !== "object" || u === null || Array.isArray(u) || Object.getPrototypeOf(u) !== Object.prototype) return false
        const o = u as Record<string, unknown>
        let present = 0
        for (const p of props) {
          if (!Object.hasOwn(o, p.name)) {
            if (p.optional) continue
            return false
          }
          present++
          if (!p.guard(o[p.name])) return false
        }
        // Every own key is a declared one (the strict decoder refuses any other).
        return present === Object.keys(o).length
      }
    }
  }
  return never
}

/** True only for a value the schema's strict decoding accepts and returns as it is. */
export const strictGuard = <A, I>(schema: Schema.Schema<A, I>): ((u: unknown) => u is A) => compile(schema.ast) as (u: unknown) => u is A
