/** A running svc serve notices, within HOME_CHECK_EVERY (10 s), that its home is no longer the one it started in. */
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import { STORE_FILE } from "../../../src/infra/journal/StoreFile.js"
import { LOCK_FILE } from "../../../src/infra/runtime/HomeLock.js"
import { HOME_CHECK_EVERY, watchHome } from "../../../src/infra/runtime/HomeWatch.js"
import { tempDir } from "../../support/svc.js"

const homeWithFiles = () => {
  const home = join(tempDir("svc-home-watch-"), "home")
  mkdirSync(home, { mode: 0o700 })
  writeFileSync(join(home, STORE_FILE), "")
  writeFileSync(join(home, LOCK_FILE), "")
  return home
}

const justShort = Duration.subtract(HOME_CHECK_EVERY, Duration.millis(1))

describe("the home watch", () => {
  it.effect("says nothing while the home is the one it started in", () =>
    Effect.gen(function* () {
      const home = homeWithFiles()
      const watch = yield* Effect.fork(yield* watchHome(home))
      // Written to, as the journal is: the same file still.
      writeFileSync(join(home, STORE_FILE), "more")
      yield* TestClock.adjust(Duration.times(HOME_CHECK_EVERY, 5))
      expect(watch.unsafePoll()).toBeNull()
      yield* Fiber.interrupt(watch)
    })
  )

  it.effect("says, at the next check, that the journal was removed", () =>
    Effect.gen(function* () {
      const home = homeWithFiles()
      const watch = yield* Effect.fork(yield* watchHome(home))
      rmSync(join(home, STORE_FILE))
      yield* TestClock.adjust(justShort)
      expect(watch.unsafePoll()).toBeNull()
      yield* TestClock.adjust(Duration.millis(1))
      const said = yield* Fiber.join(watch)
      expect(said).toBe(
        `${join(home, STORE_FILE)} is no longer there (removed, or $SVC_HOME moved) while svc serve ran for ${home}: it stops rather than journal into a file that home no longer holds, beside another svc serve that could start there (put the home back, then start svc serve again)`
      )
    })
  )

  it.effect("says that the home moved, and that a file was replaced by another (a restore over a running owner)", () =>
    Effect.gen(function* () {
      const moved = homeWithFiles()
      const watchMoved = yield* Effect.fork(yield* watchHome(moved))
      renameSync(moved, `${moved}-elsewhere`)
      yield* TestClock.adjust(HOME_CHECK_EVERY)
      expect(yield* Fiber.join(watchMoved)).toContain(`${join(moved, STORE_FILE)} is no longer there (removed, or $SVC_HOME moved)`)

      const restored = homeWithFiles()
      const watchRestored = yield* Effect.fork(yield* watchHome(restored))
      // A copy put in its place: same name, same content, another file.
      writeFileSync(join(restored, `${LOCK_FILE}.new`), "")
      renameSync(join(restored, `${LOCK_FILE}.new`), join(restored, LOCK_FILE))
      yield* TestClock.adjust(HOME_CHECK_EVERY)
      expect(yield* Fiber.join(watchRestored)).toContain(`${join(restored, LOCK_FILE)} was replaced by another file while svc serve ran for ${restored}`)

      // Removed and made again at once: often given the same inode number (ext4, tmpfs), as when
      // a home is deleted and another svc serve starts there; its birth time tells them apart.
      const again = homeWithFiles()
      const watchAgain = yield* Effect.fork(yield* watchHome(again))
      rmSync(join(again, STORE_FILE))
      writeFileSync(join(again, STORE_FILE), "")
      yield* TestClock.adjust(HOME_CHECK_EVERY)
      expect(yield* Fiber.join(watchAgain)).toContain(`${join(again, STORE_FILE)} was replaced by another file`)
    })
  )

  it.effect("fails at once when the home's files are not there to watch", () =>
    Effect.gen(function* () {
      const home = homeWithFiles()
      rmSync(join(home, LOCK_FILE))
      const failed = yield* Effect.flip(watchHome(home))
      expect(failed).toBe(`${join(home, LOCK_FILE)} is no longer there (removed, or $SVC_HOME moved) as svc serve starts for ${home}: put the home back, then start svc serve again`)
    })
  )
})
