/**
 * Worker-protocol decisions, pure: `decide(command, registry)` answers the events to append
 * (with the stream and the version they were decided against) or a rejection. Time arrives in
 * the command (`now`); secrets arrive as SHA-256 hashes (the owner never holds a worker's
 * credential). The owner runtime (svc serve) calls these live; tests replay them.
 *
 * One file per concept: Invite.ts, Credential.ts, Session.ts, Advertisement.ts, Certificate.ts, and what they
 * answer in Decision.ts. Gathered here, so the owner and the tests call `Decide.decideX`.
 */
export type { Decision, Rejection, RejectionCode } from "./Decision.js"
export * from "./Invite.js"
export * from "./Credential.js"
export * from "./Session.js"
export * from "./Advertisement.js"
export * from "./Certificate.js"
