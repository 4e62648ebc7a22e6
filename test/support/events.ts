/** Small builders of valid events for tests. */
import { createHash } from "node:crypto"
import {
  CredentialRotated,
  CredentialRotationRequested,
  SessionStarted,
  WorkerAdvertised,
  WorkerInvited,
  WorkerJoined,
  WorkerRevoked
} from "../../src/domain/journal/Events.js"

export const hash = (s: string) => createHash("sha256").update(s).digest("hex")

export const invited = (inviteId: string, at = 1_000, scope: ReadonlyArray<string> = []) =>
  new WorkerInvited({ inviteId, tokenHash: hash(`token-${inviteId}`), name: null, scope, expiresAt: scope.length > 0 ? at + 86_400_000 : null, actor: "operator", at })

export const joined = (workerId: string, inviteId: string, at = 2_000) =>
  new WorkerJoined({ workerId, inviteId, name: `box-${workerId}`, credentialHash: hash(`cred-${workerId}`), scope: [], replaces: null, joinKeyHash: null, at })

export const rotationRequested = (workerId: string, at = 3_000) => new CredentialRotationRequested({ workerId, actor: "operator", at })

export const rotated = (workerId: string, n: number, at = 4_000) =>
  new CredentialRotated({ workerId, credentialHash: hash(`cred-${workerId}-${n}`), previousHash: hash(`cred-${workerId}-${n - 1}`), previousValidUntil: at + 300_000, at })

export const revoked = (workerId: string, at = 5_000) => new WorkerRevoked({ workerId, actor: "operator", at })

export const session = (workerId: string, fence: number, takeover = false, at = 6_000) => new SessionStarted({ workerId, fence, takeover, at })

export const advertised = (workerId: string, capacity = 4, labels: ReadonlyArray<string> = ["os=linux", "arch=x64"], at = 7_000) =>
  new WorkerAdvertised({ workerId, capacity, labels, capabilities: ["node"], artifacts: [], at })
