/** What a Schema decode found wrong, in one line: the worker route, the admin API and the journal's reader say it alike. */
import * as ParseResult from "effect/ParseResult"

/** The first `max` issues, each at its path (`outcome.exitCode: Expected number, ...`), joined by "; ". */
export const issuesText = (issue: ParseResult.ParseIssue, max: number): string =>
  ParseResult.ArrayFormatter.formatIssueSync(issue)
    .slice(0, max)
    .map((i) => (i.path.length === 0 ? i.message : `${i.path.join(".")}: ${i.message}`))
    .join("; ")
