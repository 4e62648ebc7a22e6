/**
 * Sessions, pure: each hello starts a new session with a larger fence, so anything from an older
 * one is refused; a hello from the process that holds the latest session resumes it, and one
 * that replaces a session still live is recorded as a takeover.
 */
import { SessionStarted, workerStream } from "../journal/Events.js"
import { sameDigest } from "./Credential.js"
import { decided, isRejection, liveWorker, reject, type Decision, type Rejection } from "./Decision.js"
import type { Registry, WorkerRecord } from "./Registry.js"

export interface StartSession {
  readonly workerId: string
  /** Whether the worker's previous session was still live (runtime freshness, not journaled). */
  readonly previousSessionLive: boolean
  /**
   * The hello proved (fence and session key) that it comes from the process that holds the
   * latest session: it resumes it, which is no takeover however live that session was.
   */
  readonly resumes?: boolean
  /** SHA-256 of the key handed to the process in this session's welcome. */
  readonly keyHash?: string
  /**
   * SHA-256 of the credential the hello presented: it must still be one of the worker's when
   * the session is decided. A command decided again after a conflict sees a join answered again
   * in the meantime, which took the credential away (its first hello and that answer raced).
   */
  readonly credentialHash?: string
  readonly now: number
}

/** Whether `key` (its SHA-256, `keyHash`) and `fence` prove the hello comes from the process holding `w`'s latest session. */
export const resumesSession = (w: WorkerRecord, fence: number, keyHash: string): boolean =>
  w.fence > 0 && fence === w.fence && w.sessionKeyHash !== undefined && sameDigest(w.sessionKeyHash, keyHash)

/**
 * Why a call made with `fence` may not act for `w`: a later session took over (the caller must
 * stop), or the fence was never issued; undefined when it is the latest session's. The route
 * checks it when a call arrives; a decider checks it again when the call's events are decided,
 * since a hello may have started a new session in between.
 */
export const fenceProblem = (w: { readonly fence: number }, fence: number): string | undefined =>
  fence === w.fence
    ? undefined
    : fence < w.fence
      ? `another process took this worker's session over (fence ${w.fence}); this process (fence ${fence}) must stop`
      : `fence ${fence} was never issued to this worker; say hello first`

export const decideStartSession = (c: StartSession, state: Registry): Decision | Rejection => {
  const w = liveWorker(state, c.workerId)
  if (isRejection(w)) return w
  const presented = c.credentialHash
  if (presented !== undefined && !w.credentials.some((k) => sameDigest(k.hash, presented))) {
    return reject(
      "credential-replaced",
      "this credential was replaced while this hello was on its way (the join that made it was answered again, or a rotation completed): it no longer works"
    )
  }
  return decided(workerStream(w.id), w.streamVersion, [
    new SessionStarted({
      workerId: w.id,
      fence: w.fence + 1,
      takeover: c.previousSessionLive && w.fence > 0 && c.resumes !== true,
      at: c.now,
      ...(c.keyHash === undefined ? {} : { keyHash: c.keyHash })
    })
  ])
}
