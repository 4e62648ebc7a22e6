/**
 * A change of the certificate the owner serves, journaled for the audit (docs/protocol.md, "When
 * the owner's certificate changes"; the audit row says it): which one it served before, which one
 * now, and whether the change is signed with the key of the one before. Each change in a stream
 * of its own, appended once, at the start that first serves the new certificate.
 */
import { certificateStream, OwnerCertificateChanged } from "../journal/Events.js"
import type { Decision } from "./Decision.js"

export interface NoteCertificateChange {
  /** SHA-256 fingerprints (hex) of the certificate served before and of the one served now. */
  readonly from: string
  readonly to: string
  readonly signed: boolean
  readonly now: number
}

export const decideCertificateChange = (c: NoteCertificateChange): Decision => ({
  _tag: "Decided",
  stream: certificateStream(c.to, c.now),
  expectedVersion: 0,
  events: c.from === c.to ? [] : [new OwnerCertificateChanged({ from: c.from, to: c.to, signed: c.signed, at: c.now })]
})
