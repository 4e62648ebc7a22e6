/**
 * A failure in words, with what caused it when it says more: @effect/sql's "Failed to execute
 * statement" alone hid SQLite's "database or disk is full" (a full disk at start, or at the last
 * checkpoint of a stop). The runtime's start and its checkpoints say failures through it alike.
 */
export const reasonText = (reason: unknown): string => {
  const messageOf = (e: unknown): string | undefined =>
    e instanceof Error ? e.message : typeof (e as { message?: unknown } | null)?.message === "string" ? (e as { message: string }).message : undefined
  const own = messageOf(reason) ?? String(reason)
  const cause = messageOf((reason as { cause?: unknown } | null)?.cause)
  return cause === undefined || cause === "" || own.includes(cause) ? own : `${own}: ${cause}`
}
