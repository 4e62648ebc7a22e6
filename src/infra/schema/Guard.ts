/**
 * Type guards compiled once from a Schema's AST into plain checks, for hot paths that would
 * otherwise run the full decoder on every value: the journal's read path (replay) and the worker
 * route. Two modes:
 *
 * - `fastGuard` (loose, the journal): accepts what `Schema.is` accepts. Excess properties are
 *   allowed, as `Schema.is` allows them (callers keep only the declared fields); a node kind it
 *   does not cover falls back to `Schema.is`, so it never accepts what the schema refuses.
 * - `strictGuard` (the route): true only for a value that the strict decoder
 *   (`onExcessProperty: "error"`) would accept and give back unchanged: a struct must be a plain
 *   object whose every own key is declared, and a node kind it does not cover (a transformation,
 *   a declaration, a tuple with fixed elements) makes it answer false, leaving the decision to
 *   the decoder. It may say false where the decoder would accept, never true where the decoder
 *   would refuse or transform.
 *
 * Covered in both: string, number, boolean, literal and unknown keywords, refinements (their own
 * filters), unions, arrays, and structs without index signatures. Property tests hold each mode
 * to its promise (test/infra/journal/read-path.test.ts, test/infra/http/strict-guard.test.ts).
 *
 * The checks are generated as the source of one function per node (`new Function`, as ajv does
 * for JSON Schemas): each struct reads its properties by name at a fixed place in the code, so
 * V8 sees one shape there and reads them directly, where a generic loop over the property names
 * made every read a lookup by key. Nothing of the schema goes into the source but property names
 * (as JSON string literals) and indexes; literals, refinements and fallbacks are passed in as
 * values.
 */
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

type Guard = (u: unknown) => boolean
type Mode = "loose" | "strict"

const OPTIONS: AST.ParseOptions = {}

interface Compiler {
  readonly mode: Mode
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

/** A struct's checks: loose reads declared keys wherever they are; strict wants exactly the declared own keys. */
const struct = (c: Compiler, ast: AST.TypeLiteral): string => {
  const props = ast.propertySignatures.map((ps) => ({ key: JSON.stringify(ps.name), optional: ps.isOptional, guard: compile(c, ps.type) }))
  if (c.mode === "loose") {
    const checks = props.map(({ key, optional, guard }) =>
      optional ? `if (${key} in u && !${guard}(u[${key}])) return false;` : `if (!(${key} in u) || !${guard}(u[${key}])) return false;`
    )
    return `if (typeof u !== "object" || u === null || Array.isArray(u)) return false; ${checks.join(" ")} return true`
  }
  const checks = props.map(({ key, optional, guard }) =>
    `if (Object.hasOwn(u, ${key})) { if (!${guard}(u[${key}])) return false; n++ }${optional ? "" : " else return false;"}`
  )
  // Every own key is a declared one (the strict decoder refuses any other).
  return `if (typeof u !== "object" || u === null || Object.getPrototypeOf(u) !== Object.prototype) return false; let n = 0; ${checks.join(" ")} return n === Object.keys(u).length`
}

const body = (c: Compiler, ast: AST.AST): string => {
  switch (ast._tag) {
    case "StringKeyword":
      return `return typeof u === "string"`
    case "NumberKeyword":
      // The decoder accepts NaN and the infinities too; JSON cannot carry them.
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
      if (ast.rest.length === 0 && ast.elements.every((e) => !e.isOptional)) {
        // A tuple of fixed length (an output piece's `at`): every element, and no more.
        const items = ast.elements.map((e) => compile(c, e.type))
        return `if (!Array.isArray(u) || u.length !== ${items.length}) return false; ${items.map((item, i) => `if (!${item}(u[${i}])) return false;`).join(" ")} return true`
      }
      break
    }
    case "TypeLiteral": {
      if (ast.indexSignatures.length === 0 && ast.propertySignatures.every((ps) => typeof ps.name === "string")) return struct(c, ast)
      break
    }
  }
  return c.mode === "strict" ? `return false` : `return ${value(c, Schema.is(Schema.make(ast)))}(u)`
}

const guardOf = (ast: AST.AST, mode: Mode): Guard => {
  const c: Compiler = { mode, functions: [], values: [] }
  const root = compile(c, ast)
  const make = new Function("V", "O", `"use strict"; ${c.functions.join("\n")}; return ${root}`) as (values: Array<unknown>, options: AST.ParseOptions) => Guard
  return make(c.values, OPTIONS)
}

/** The loose guard of a schema's AST: what `Schema.is` accepts. */
export const fastGuardOf = (ast: AST.AST): Guard => guardOf(ast, "loose")

export const fastGuard = <A, I>(schema: Schema.Schema<A, I>): ((u: unknown) => u is A) => fastGuardOf(schema.ast) as (u: unknown) => u is A

/** True only for a value the schema's strict decoding accepts and returns as it is. */
export const strictGuard = <A, I>(schema: Schema.Schema<A, I>): ((u: unknown) => u is A) => guardOf(schema.ast, "strict") as (u: unknown) => u is A
