/**
 * What a worker-protocol decider answers: the events to append, with the stream and the version
 * they were decided against, or a rejection with its code. Apart from the deciders because every
 * concept's decider answers the same way (Invite.ts, Credential.ts, Session.ts, Advertisement.ts),
 * and most first need the worker to be linked and not revoked (`liveWorker`).
 */
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import type { Event } from "../journal/Events.js"
import type { Registry, WorkerRecord } from "./Registry.js"

export type RejectionCode =
  | "invalid-scope"
  | "invalid-expiry"
  | "invalid-name"
  | "unknown-invite"
  | "invite-redeemed"
  | "invite-expired"
  | "invite-revoked"
  | "wrong-token"
  | "unknown-worker"
  | "worker-revoked"
  | "no-rotation-pending"
  | "credential-replaced"
  | "invalid-advertisement"
  | "fenced"

export interface Rejection {
  readonly _tag: "Rejected"
  readonly code: RejectionCode
  readonly message: string
}

export interface Decision {
  readonly _tag: "Decided"
  readonly stream: string
  readonly expectedVersion: number
  /** Empty when nothing changed (an advertisement equal to the last one is not journaled). */
  readonly events: ReadonlyArray<Event>
}

export const reject = (code: RejectionCode, message: string): Rejection => ({ _tag: "Rejected", code, message })
export const decided = (stream: string, expectedVersion: number, events: ReadonlyArray<Event>): Decision => ({ _tag: "Decided", stream, expectedVersion, events })

/** The worker `workerId`, linked to this owner and not revoked, or the rejection saying which it is not. */
export const liveWorker = (state: Registry, workerId: string): WorkerRecord | Rejection => {
  const found = HashMap.get(state.workers, workerId)
  if (Option.isNone(found)) return reject("unknown-worker", `no worker ${JSON.stringify(workerId)} is linked to this owner`)
  if (found.value.revokedAt !== null) return reject("worker-revoked", `worker ${found.value.name} is revoked`)
  return found.value
}
export const isRejection = (x: unknown): x is Rejection => typeof x === "object" && x !== null && (x as Rejection)._tag === "Rejected"
