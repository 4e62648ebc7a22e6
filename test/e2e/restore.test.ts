/**
 * An owner's journal restored from a backup (docs/operations.md, "Restoring a backup"): real
 * `svc serve` processes and the real CLI. After the copy was made a worker is revoked and an
 * invite spent; the older copy put back, the start refuses it, saying what would come back;
 * with --restored it goes on from it, revoking both again (the revoked worker linked again at its
 * next restart, and the spent token worked again, with nothing said).
 */
import { copyFileSync, existsSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { portBelowEphemeral, startServe, stopAllServes, svcIn, Transcript } from "../support/serve.js"
import { svc, tempDirs } from "../support/svc.js"

const transcript = new Transcript()
const temps = tempDirs()
const home = temps.make
const run = (h: string, ...args: Array<string>) => svcIn(transcript, h, args)

afterAll(async () => {
  await stopAllServes()
  temps.removeAll()
}, 30_000)

interface WorkerRow {
  readonly id: string
  readonly name: string
  readonly revoked: boolean
}
const workers = async (h: string) => (JSON.parse((await run(h, "workers", "status", "--json")).stdout) as { workers: ReadonlyArray<WorkerRow> }).workers

describe("an owner whose journal was restored from a backup", () => {
  it("refuses the older journal, saying what would come back; with --restored goes on from it, revoking again what was closed since", async () => {
    const owner = home("svc-restore-owner-")
    // Restarted on its address (the invites' tokens name it): one no other test file is handed meanwhile.
    let serve = await startServe("owner", owner, transcript, { listen: await portBelowEphemeral() })
    const lab = await run(owner, "workers", "invite", "--name", "lab")
    expect((await run(home("svc-restore-lab-"), "workers", "join", lab.stdout.trim())).code).toBe(0)
    const later = (await run(owner, "workers", "invite", "--name", "later")).stdout.trim()
    // The backup: a copy of the journal of a cleanly stopped owner (its WAL merged at the stop).
    expect((await serve.stop()).code).toBe(0)
    const backup = join(home("svc-restore-backup-"), "svc.sqlite")
    copyFileSync(join(owner, "svc.sqlite"), backup)

    // On the same address: the invites' tokens name it.
    const listen = new URL(serve.listenUrl).host
    serve = await startServe("owner after the backup", owner, transcript, { listen })
    const labId = (await workers(owner)).find((w) => w.name === "lab")!.id
    expect((await run(owner, "workers", "revoke", "lab")).code).toBe(0)
    expect((await run(home("svc-restore-later-"), "workers", "join", later)).code).toBe(0)
    expect((await serve.stop()).code).toBe(0)

    // The backup restored in its place.
    copyFileSync(backup, join(owner, "svc.sqlite"))
    for (const f of ["svc.sqlite-wal", "svc.sqlite-shm"]) if (existsSync(join(owner, f))) rmSync(join(owner, f))
    const refused = await svc(["serve", "--listen", "127.0.0.1:0"], { cwd: owner, home: owner })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/^svc: the journal \S+svc\.sqlite ends at sequence \d+, \d+ events before the sequence \d+ this home's owner had written \(its mark \S+journal\.mark, of [0-9T:.Z-]+\): an older copy was put in its place \(a backup restored\?\), or another, shorter journal\. /)
    // The copy it refused is left as it was: no last checkpoint written into it at the refused start's stop.
    expect(readFileSync(join(owner, "svc.sqlite"))).toEqual(readFileSync(backup))
    expect(refused.stdout + refused.stderr).not.toContain("checkpoint at sequence")
    expect(refused.stderr).toContain("workers revoked and credentials replaced since would work again, invites spent since could be redeemed again")
    expect(refused.stderr).toContain("To go on from this journal, start with svc serve --restored: it first revokes again the 1 worker and 1 invite its mark says were closed since")

    serve = await startServe("owner --restored", owner, transcript, { listen, args: ["--restored"] })
    expect(serve.output()).toContain(`worker lab (${labId}) revoked again: it was revoked after the copy of the journal was made; invite it again`)
    expect(serve.output()).toMatch(/invite \S+ revoked again: it was spent after the copy of the journal was made, and its token would have worked again/)
    expect((await workers(owner)).find((w) => w.id === labId)?.revoked).toBe(true)
    const again = await run(home("svc-restore-again-"), "workers", "join", later)
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/revoked/)
    // Said in the audit, by whom: the worker's revocation and the invite's.
    const audit = JSON.parse((await run(owner, "audit", "--json")).stdout) as { rows: ReadonlyArray<{ kind: string; actor: string; workerId: string | null; inviteId: string | null }> }
    const again_ = audit.rows.filter((r) => r.actor === "svc serve --restored (closed before the journal was restored)")
    expect(again_.map((r) => ({ kind: r.kind, worker: r.workerId, invite: r.inviteId !== null }))).toEqual([
      { kind: "revocation", worker: labId, invite: false },
      { kind: "revocation", worker: null, invite: true }
    ])
    expect((await serve.stop()).code).toBe(0)

    // Gone on from: the next start takes it as its own.
    serve = await startServe("owner next", owner, transcript)
    expect((await serve.stop()).code).toBe(0)

    // The journal removed: said as such, not as a backup.
    rmSync(join(owner, "svc.sqlite"))
    const empty = await svc(["serve", "--listen", "127.0.0.1:0"], { cwd: owner, home: owner })
    expect(empty.code).toBe(1)
    expect(empty.stderr).toMatch(/^svc: the journal \S+svc\.sqlite is empty, where this home's owner had written \d+ events \(its mark \S+, of [0-9T:.Z-]+\): it was removed, or a new one put in its place\. /)
  }, 90_000)
})
