/** What a Schema decode found wrong, in one line: the worker route, the admin API and the journal's reader say it alike. */
import * as ParseResult from "effect/ParseResult"

/**
 * The most characters of one issue: its message quotes the value found (`actual ...`), which can
 * be a whole body of 64 KiB (a refusal quoted 4,000 brackets of one); its start says what is wrong.
 */
export const MAX_ISSUE_CHARS = 300

const cut = (text: string): string => {
  if (text.length <= MAX_ISSUE_CHARS) return text
  let end = MAX_ISSUE_CHARS - 1
  // Not between the two halves of a surrogate pair.
  const last = text.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end--
  return `${text.slice(0, end)}…`
}

/** The first `max` issues, each at its path (`outcome.exitCode: Expected number, ...`) and cut to MAX_ISSUE_CHARS, joined by "; ". */
export const issuesText = (issue: ParseResult.ParseIssue, max: number): string =>
  ParseResult.ArrayFormatter.formatIssueSync(issue)
    .slice(0, max)
    .map((i) => cut(i.path.length === 0 ? i.message : `${i.path.join(".")}: ${i.message}`))
    .join("; ")
