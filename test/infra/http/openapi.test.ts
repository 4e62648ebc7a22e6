import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { openApiDocument } from "../../../src/infra/http/WorkerApi.js"

describe("docs/openapi.json", () => {
  it("is the document generated from the route's declaration (run npm run openapi after changing it)", () => {
    const committed = JSON.parse(readFileSync(new URL("../../../docs/openapi.json", import.meta.url), "utf8"))
    expect(committed).toEqual(JSON.parse(JSON.stringify(openApiDocument())))
  })

  it("declares the one route with bearer security, every message kind and every refusal status", () => {
    const doc = openApiDocument() as unknown as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }
    expect(Object.keys(doc.paths)).toEqual(["/api/worker"])
    expect(Object.keys(doc.paths["/api/worker"]!)).toEqual(["post"])
    expect(Object.keys(doc.paths["/api/worker"]!["post"]!.responses).sort()).toEqual(["200", "400", "401", "403", "404", "409", "413", "415", "503"])
    const text = JSON.stringify(doc)
    for (const kind of ["join", "hello", "advertise", "heartbeat", "claim", "decline", "report", "joined", "welcome", "ack", "no-work"]) expect(text).toContain(`"${kind}"`)
  })
})
