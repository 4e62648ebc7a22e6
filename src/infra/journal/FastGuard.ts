/**
 * A type guard compiled once from a Schema's AST into plain checks, for the journal's hot read
 * path (replay). It covers the node kinds event payloads use (strings, numbers, booleans,
 * literals, unknown, arrays, structs, unions, refinements with their own filters); anything
 * else falls back to `Schema.is`, so the guard never accepts what the schema refuses. Excess
 * properties are allowed, as `Schema.is` allows them: callers keep only the declared fields.
 *
 * The checks are generated as the source of one function per node (`new Function`, as ajv
 * does for JSON Schemas): each struct reads its properties by name at a fixed place in the
 * code, so V8 sees one shape there and reads them directly, where a generic loop over the
 * property names made every read a lookup by key. Nothing of the schema goes into the source
 * but property names (as JSON string literals) and indexes; literals, refinements and
 * fallbacks are passed in as values.
 */
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

type Guard = (u: unknown) => boolean

const OPTIONS: AST.ParseOptions = {}

interface Compiler {
  /** The functions' sources, `f0`, `f1`...; each checks one node. */
  readonly functions: Array<string>
  /** Values the functions use: literals, refinement ASTs, fallback guards. */
  readonly values: Array<unknown>
}

const value = (c: Compiler, v: unknown): string => {
  c.values.push(v)
  return `V[${c.values.length - 1}]`
}

/** Compiles `ast` into a new function and answers its name. */
const compile = (c: Compiler, ast: AST.AST): string => {
  const name = `f${c.functions.length}`
  c.functions.push("")
  c.functions[Number(name.slice(1))] = `function ${name}(u) { ${body(c, ast)} }`
  return name
}

const body = (c: Compiler, ast: AST.AST): string => {
  switch (ast._tag) {
    case "StringKeyword":
      return `return typeof u === "string"`
    case "NumberKeyword":
      return `return typeof u === "number"`
    case "BooleanKeyword":
      return `return typeof u === "boolean"`
    case "UnknownKeyword":
    case "AnyKeyword":
      return `return true`
    case "Literal":
      return `return u === ${value(c, ast.literal)}`
    case "Refinement": {
      const from = compile(c, ast.from)
      const refinement = value(c, ast)
      return `return ${from}(u) && ${refinement}.filter(u, O, ${refinement})._tag === "None"`
    }
    case "Union": {
      const members = ast.types.map((t) => compile(c, t))
      return `return ${members.map((m) => `${m}(u)`).join(" || ")}`
    }
    case "TupleType": {
      if (ast.elements.length === 0 && ast.rest.length === 1) {
        const item = compile(c, ast.rest[0]!.type)
        return `if (!Array.isArray(u)) return false; for (let i = 0; i < u.length; i++) if (!${item}(u[i])) return false; return true`
      }
      break
    }
    case "TypeLiteral": {
      if (ast.indexSignatures.length === 0 && ast.propertySignatures.every((ps) => typeof ps.name === "string")) {
        const checks = ast.propertySignatures.map((ps) => {
          const key = JSON.stringify(ps.name)
          const guard = compile(c, ps.type)
          return ps.isOptional
            ? `if (${key} in u && !${guard}(u[${key}])) return false;`
            : `if (!(${key} in u) || !${guard}(u[${key}])) return false;`
        })
        return `if (typeof u !== "object" || u === null || Array.isArray(u)) return false; ${checks.join(" ")} return true`
      }
      break
    }
  }
  return `return ${value(c, Schema.is(Schema.make(ast)))}(u)`
}

/** The guard of a schema's AST. */
export const fastGuardOf = (ast: AST.AST): Guard => {
  const c: Compiler = { functions: [], values: [] }
  const root = compile(c, ast)
  const make = new Function("V", "O", `"use strict"; ${c.functions.join("\n")}; return ${root}`) as (values: Array<unknown>, options: AST.ParseOptions) => Guard
  return make(c.values, OPTIONS)
}

export const fastGuard = <A, I>(schema: Schema.Schema<A, I>): ((u: unknown) => u is A) => fastGuardOf(schema.ast) as (u: unknown) => u is A
