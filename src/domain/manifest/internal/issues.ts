/**
 * Turns an Effect `ParseIssue` tree into manifest problems: one per failing key, with the key
 * path and a message in the manifest's own words. Written against `ParseResult`'s public issue
 * model so that every problem of a decode (errors: "all") is kept, not only the first.
 */
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as AST from "effect/SchemaAST"
import { describeValue, error, type KeyPath, type Problem } from "../Problem.js"
import { suggest } from "./suggest.js"

const expectedOf = (ast: AST.AST): string => {
  switch (ast._tag) {
    case "StringKeyword":
      return "a string"
    case "NumberKeyword":
      return "a number"
    case "BooleanKeyword":
      return "true or false"
    case "TupleType":
      return "a list"
    case "TypeLiteral":
      return "a map"
    case "Literal":
      return JSON.stringify(ast.literal)
    case "Union":
      return ast.types.map(expectedOf).join(" or ")
    case "Refinement":
      return expectedOf(ast.from)
    case "Transformation":
      return expectedOf(ast.to)
    case "Declaration": {
      const description = AST.getDescriptionAnnotation(ast)
      return Option.getOrElse(description, () => "a valid value")
    }
    default:
      return "a valid value"
  }
}

const customMessage = (ast: AST.AST, issue: ParseResult.ParseIssue): string | undefined => {
  const annotation = AST.getMessageAnnotation(ast)
  if (Option.isNone(annotation)) return undefined
  const out = annotation.value(issue)
  if (typeof out === "string") return out
  if (typeof out === "object" && out !== null && "message" in out && typeof out.message === "string") return out.message
  return undefined
}

const expectedKeys = (ast: AST.AST | undefined): ReadonlyArray<string> => {
  if (ast === undefined) return []
  if (ast._tag === "TypeLiteral") return ast.propertySignatures.map((ps) => String(ps.name))
  if (ast._tag === "Refinement") return expectedKeys(ast.from)
  if (ast._tag === "Transformation") return expectedKeys(ast.from)
  return []
}

/** Records reject a bad key through its parameter schema; this finds that schema's rule text. */
const keyRule = (ast: AST.AST | undefined): string | undefined => {
  if (ast === undefined) return undefined
  if (ast._tag === "Refinement" || ast._tag === "Transformation") return keyRule(ast.from)
  if (ast._tag !== "TypeLiteral" || ast.indexSignatures.length === 0) return undefined
  const parameter = ast.indexSignatures[0]!.parameter
  return Option.getOrUndefined(AST.getDescriptionAnnotation(parameter))
}

/** `Schema.Literal("a", "b")` is a union of literals: one message, not one per literal. */
const literalChoices = (ast: AST.AST): ReadonlyArray<string> | undefined => {
  if (ast._tag !== "Union" || !ast.types.every((t) => t._tag === "Literal")) return undefined
  return ast.types.map((t) => String((t as AST.Literal).literal))
}

export const problemsOfIssue = (root: ParseResult.ParseIssue): Array<Problem> => {
  const out: Array<Problem> = []
  const walk = (issue: ParseResult.ParseIssue, path: KeyPath, parent: AST.AST | undefined): void => {
    switch (issue._tag) {
      case "Pointer": {
        const segments = Array.isArray(issue.path) ? issue.path : [issue.path]
        walk(issue.issue, [...path, ...segments.map((s) => (typeof s === "symbol" ? String(s) : s))], parent)
        return
      }
      case "Composite": {
        const literals = literalChoices(issue.ast)
        if (literals !== undefined) {
          out.push(error(path, customMessage(issue.ast, issue) ?? `must be one of ${literals.join(", ")}, not ${describeValue(issue.actual)}`))
          return
        }
        const issues = Array.isArray(issue.issues) ? issue.issues : [issue.issues]
        for (const inner of issues as ReadonlyArray<ParseResult.ParseIssue>) walk(inner, path, issue.ast)
        return
      }
      case "Refinement": {
        if (issue.kind === "From") return walk(issue.issue, path, parent)
        const inner = issue.issue
        // A filter that says where in the value the problem is (`{ path: [0], message }`).
        if (inner._tag === "Pointer") return walk(inner, path, parent)
        const message =
          (inner._tag === "Type" ? inner.message : undefined) ??
          customMessage(issue.ast, issue) ??
          Option.getOrUndefined(AST.getDescriptionAnnotation(issue.ast)) ??
          `is not ${expectedOf(issue.ast)}`
        out.push(error(path, message))
        return
      }
      case "Transformation":
        return walk(issue.issue, path, parent)
      case "Type": {
        const message =
          issue.message ?? customMessage(issue.ast, issue) ?? `must be ${expectedOf(issue.ast)}, not ${describeValue(issue.actual)}`
        out.push(error(path, message))
        return
      }
      case "Missing":
        out.push(error(path, typeof path[path.length - 1] === "number" ? "must not be empty" : "is required"))
        return
      case "Unexpected": {
        const key = String(path[path.length - 1])
        const rule = keyRule(parent)
        if (rule !== undefined) {
          out.push(error(path, `${JSON.stringify(key)} is not a valid name: ${rule}`, "key"))
          return
        }
        // YAML's merge key: the parser leaves it as a key, and the keys it would merge missing.
        if (key === "<<") {
          out.push(error(path, 'is a YAML merge key, which bag.yaml does not take: write the keys out (an anchor and alias, "&x" and "*x", may stand for a whole value)', "key"))
          return
        }
        const candidates = expectedKeys(parent)
        const hint = suggest(key, candidates)
        out.push(error(path, `unknown key ${JSON.stringify(key)}${hint === undefined ? "" : `; did you mean ${JSON.stringify(hint)}?`}`, "key"))
        return
      }
      case "Forbidden":
        out.push(error(path, issue.message ?? "cannot be checked"))
        return
    }
  }
  walk(root, [], undefined)
  return out
}
