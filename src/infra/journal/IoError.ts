/**
 * A failure of the store's I/O as the journal's own error, saying what was being done (infra
 * errors are mapped at the adapter, so app signatures show JournalError only). One mapping for
 * every adapter on the store: the writer, the checkpoints, the store's opening, the reads and
 * the read-only reader.
 */
import { JournalError } from "../../app/journal/Journal.js"

export const ioError = (what: string) => (cause: unknown) =>
  new JournalError({ reason: "Io", message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })
