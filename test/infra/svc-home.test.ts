/** $SVC_HOME as svc takes it (src/infra/SvcHome.ts). */
import { describe, expect, it } from "vitest"
import { homeOf, SvcHomeProblem } from "../../src/infra/SvcHome.js"

describe("$SVC_HOME", () => {
  it("is ~/.svc when unset or empty, the path given when absolute, and refused when relative", () => {
    expect(homeOf("", "/home/ada")).toBe("/home/ada/.svc")
    expect(homeOf("/srv/svc/", "/home/ada")).toBe("/srv/svc")
    expect(homeOf("/srv/a/../svc", "/home/ada")).toBe("/srv/svc")
    const relative = homeOf("svc-home", "/home/ada")
    expect(relative).toBeInstanceOf(SvcHomeProblem)
    expect((relative as SvcHomeProblem).message).toBe(
      'SVC_HOME must be an absolute path, not "svc-home": a relative one names another home in each directory svc runs from (unset it for /home/ada/.svc)'
    )
  })
})
