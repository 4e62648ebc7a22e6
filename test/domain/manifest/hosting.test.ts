/** infra and provides (spec: "infra", "provides"; Errors: infra.root that does not exist). */
import { describe, expect, it } from "vitest"
import { listing } from "../../support/manifest.js"
import { doc, fails, valid, type Row } from "./cases.js"

const rejects = (rows: ReadonlyArray<Row>) =>
  it.each(rows)("rejects $name", ({ yaml, path, line, message }) => {
    fails(yaml, { path, line, message })
  })

describe("infra", () => {
  const text = doc("infra:", "  provider: terraform", "  root: infra/main", "  variables: [TF_VAR_region, AWS_PROFILE]")

  it("accepts the provider, a root and variables", () => {
    expect(valid(text).infra).toEqual({ provider: "terraform", root: "infra/main", variables: ["TF_VAR_region", "AWS_PROFILE"] })
  })

  it("accepts a root that exists in the bag", () => {
    valid(text, listing(["infra/main/main.tf"]))
  })

  it("refuses a root that does not exist", () => {
    fails(text, { path: "infra.root", line: 5, message: "infra/main does not exist in the bag" }, { listing: listing(["infra/other.tf"]) })
  })

  it("refuses a root that is a file", () => {
    fails(text, { path: "infra.root", line: 5, message: "infra/main is a file, not a directory" }, { listing: listing(["infra/main"]) })
  })

  rejects([
    { name: "another provider", yaml: doc("infra: {provider: pulumi, root: infra}"), path: "infra.provider", line: 3, message: "must be one of terraform" },
    { name: "a capitalised provider", yaml: doc("infra: {provider: Terraform, root: infra}"), path: "infra.provider", line: 3, message: "must be one of terraform" },
    { name: "no provider", yaml: doc("infra: {root: infra}"), path: "infra.provider", line: 3, message: "is required" },
    { name: "no root", yaml: doc("infra: {provider: terraform}"), path: "infra.root", line: 3, message: "is required" },
    { name: "a root outside the bag", yaml: doc("infra: {provider: terraform, root: ../infra}"), path: "infra.root", line: 3, message: "must be a relative path inside the bag" },
    { name: "a variable with a hyphen", yaml: doc("infra: {provider: terraform, root: i, variables: [aws-profile]}"), path: "infra.variables[0]", line: 3, message: "must be an environment variable name" },
    { name: "a variable starting with a digit", yaml: doc("infra: {provider: terraform, root: i, variables: [1PASSWORD]}"), path: "infra.variables[0]", line: 3, message: "must be an environment variable name" },
    { name: "variables as a string", yaml: doc("infra: {provider: terraform, root: i, variables: AWS_PROFILE}"), path: "infra.variables", line: 3, message: "must be a list" },
    { name: "an unknown key", yaml: doc("infra: {provider: terraform, root: i, workspace: prod}"), path: "infra.workspace", line: 3, message: 'unknown key "workspace"' }
  ])
})

describe("provides", () => {
  it.each([
    ["local only", "provides: {local: {}}", { local: {} }],
    ["a private tunnel", "provides: {tunnel: {reach: [private]}}", { tunnel: { reach: ["private"] } }],
    ["both, with a gated public tunnel", "provides: {local: {}, tunnel: {reach: [private, public], gates: [access]}}", { local: {}, tunnel: { reach: ["private", "public"], gates: ["access"] } }]
  ])("accepts %s", (_what, line, expected) => {
    expect(valid(doc(line)).provides).toEqual(expected)
  })

  rejects([
    { name: "neither local nor tunnel", yaml: doc("provides: {}"), path: "provides", line: 3, message: "names neither local nor tunnel" },
    { name: "a tunnel without reach", yaml: doc("provides:", "  tunnel: {gates: [access]}"), path: "provides.tunnel.reach", line: 4, message: "is required" },
    { name: "an unknown reach", yaml: doc("provides:", "  tunnel: {reach: [internet]}"), path: "provides.tunnel.reach[0]", line: 4, message: "must be one of private, public" },
    { name: "an unknown gate", yaml: doc("provides:", "  tunnel: {reach: [public], gates: [password]}"), path: "provides.tunnel.gates[0]", line: 4, message: "must be one of access" },
    { name: "a local object with keys", yaml: doc("provides:", "  local: {domain: test}"), path: "provides.local", line: 4, message: "must be an empty map {}" },
    { name: "local as true", yaml: doc("provides:", "  local: true"), path: "provides.local", line: 4, message: "must be an empty map {}, not true" },
    { name: "local as a list", yaml: doc("provides:", "  local: []"), path: "provides.local", line: 4, message: "must be an empty map {}, not a list" },
    { name: "an unknown capability", yaml: doc("provides:", "  local: {}", "  dns: {}"), path: "provides.dns", line: 5, message: 'unknown key "dns"' }
  ])
})
