/** vendors (spec: "vendors" table and its three duplicate rules). */
import { describe, expect, it } from "vitest"
import { doc, fails, valid, type Row } from "./cases.js"

/** One vendor `a` whose models are the given flow maps (lines 9 onward). */
const vendor = (...models: ReadonlyArray<string>) =>
  doc("vendors:", "  - id: a", "    label: A", "    credential: null", "    models:", ...models.map((m) => `      - ${m}`))

describe("vendors", () => {
  it("accepts every key and every credential form", () => {
    const m = valid(
      doc(
        "vendors:",
        "  - id: cloud",
        "    label: Cloud",
        "    baseUrl: https://api.example.com/v1",
        "    credential: {env: CLOUD_API_KEY, item: Cloud, field: password}",
        "    compatible:",
        "      - {with: openai, baseUrl: https://api.example.com/oai, structuredOutput: native, egressSandbox: true}",
        "    models:",
        "      - {id: big, label: Big, kind: completion, roles: [default], note: best, structuredOutput: native}",
        "      - {id: small, label: Small, kind: completion, roles: [small]}",
        "      - {id: embed, label: Embed, kind: embedding, roles: [default], dimensions: 1536}",
        "      - {id: judge, label: Judge, kind: decision, roles: [default]}",
        "  - id: local",
        "    label: Local",
        "    baseUrl: {env: LOCAL_URL, fallback: 'http://localhost:11434', path: /v1}",
        "    credential: {placeholder: ollama}",
        "    models:",
        "      - {id: llama, label: Llama, kind: completion, roles: [default], local: true, structuredOutput: prompted}",
        "  - id: keyless",
        "    label: Keyless",
        "    credential: null",
        "    models:",
        "      - {id: m, label: M, kind: completion}"
      )
    )
    expect(m.vendors?.map((v) => v.id)).toEqual(["cloud", "local", "keyless"])
    expect(m.vendors?.[2]?.credential).toBeNull()
  })

  it("accepts one role claimed by models of different kinds, and by models of different vendors", () => {
    valid(
      doc(
        "vendors:",
        "  - {id: a, label: A, credential: null, models: [{id: c, label: C, kind: completion, roles: [default]}, {id: e, label: E, kind: embedding, roles: [default]}]}",
        "  - {id: b, label: B, credential: null, models: [{id: c, label: C, kind: completion, roles: [default]}]}"
      )
    )
  })

  const rows: ReadonlyArray<Row> = [
    { name: "a vendor without id", yaml: doc("vendors:", "  - {label: A, credential: null, models: [{id: m, label: M, kind: completion}]}"), path: "vendors[0].id", line: 4, message: "is required" },
    { name: "a vendor without label", yaml: doc("vendors:", "  - {id: a, credential: null, models: [{id: m, label: M, kind: completion}]}"), path: "vendors[0].label", line: 4, message: "is required" },
    { name: "a vendor without credential", yaml: doc("vendors:", "  - {id: a, label: A, models: [{id: m, label: M, kind: completion}]}"), path: "vendors[0].credential", line: 4, message: "is required" },
    { name: "a vendor without models", yaml: doc("vendors:", "  - {id: a, label: A, credential: null}"), path: "vendors[0].models", line: 4, message: "is required" },
    { name: "a vendor with no model", yaml: doc("vendors:", "  - {id: a, label: A, credential: null, models: []}"), path: "vendors[0].models", line: 4, message: "must list at least one model" },
    { name: "a credential that is a string", yaml: doc("vendors:", "  - {id: a, label: A, credential: KEY, models: [{id: m, label: M, kind: completion}]}"), path: "vendors[0].credential", line: 4, message: "a map with env (and item, field), a map with placeholder, or null" },
    { name: "a credential env in lower case", yaml: doc("vendors:", "  - {id: a, label: A, credential: {env: key}, models: [{id: m, label: M, kind: completion}]}"), path: "vendors[0].credential.env", line: 4, message: "an environment variable name" },
    { name: "a credential map without env", yaml: doc("vendors:", "  - {id: a, label: A, credential: {item: x}, models: [{id: m, label: M, kind: completion}]}"), path: "vendors[0].credential.env", line: 4, message: "is required" },
    { name: "a credential with an unknown field", yaml: doc("vendors:", "  - {id: a, label: A, credential: {env: K, field: pin}, models: [{id: m, label: M, kind: completion}]}"), path: "vendors[0].credential.field", line: 4, message: "must be one of username, password, notes, uri" },
    { name: "a placeholder with env", yaml: doc("vendors:", "  - {id: a, label: A, credential: {placeholder: x, env: K}, models: [{id: m, label: M, kind: completion}]}"), path: "vendors[0].credential.env", line: 4, message: 'unknown key "env"' },
    { name: "a baseUrl map with an unknown key", yaml: doc("vendors:", "  - {id: a, label: A, baseUrl: {url: x}, credential: null, models: [{id: m, label: M, kind: completion}]}"), path: "vendors[0].baseUrl.url", line: 4, message: 'unknown key "url"' },
    { name: "a baseUrl list", yaml: doc("vendors:", "  - {id: a, label: A, baseUrl: [x], credential: null, models: [{id: m, label: M, kind: completion}]}"), path: "vendors[0].baseUrl", line: 4, message: "a URL or a map with env, fallback and path" },
    { name: "a compatible entry without with", yaml: doc("vendors:", "  - {id: a, label: A, credential: null, compatible: [{baseUrl: x}], models: [{id: m, label: M, kind: completion}]}"), path: "vendors[0].compatible[0].with", line: 4, message: "is required" },
    { name: "an unknown vendor key", yaml: doc("vendors:", "  - {id: a, label: A, credential: null, region: eu, models: [{id: m, label: M, kind: completion}]}"), path: "vendors[0].region", line: 4, message: 'unknown key "region"' },
    { name: "vendors as a map", yaml: doc("vendors:", "  a: {id: a}"), path: "vendors", line: 4, message: "must be a list" },
    { name: "a model without kind", yaml: vendor("{id: m, label: M}"), path: "vendors[0].models[0].kind", line: 8, message: "is required" },
    { name: "a model without id", yaml: vendor("{label: M, kind: completion}"), path: "vendors[0].models[0].id", line: 8, message: "is required" },
    { name: "a model without label", yaml: vendor("{id: m, kind: completion}"), path: "vendors[0].models[0].label", line: 8, message: "is required" },
    { name: "an unknown model kind", yaml: vendor("{id: m, label: M, kind: chat}"), path: "vendors[0].models[0].kind", line: 8, message: "must be one of completion, embedding, decision" },
    { name: "an unknown role", yaml: vendor("{id: m, label: M, kind: completion, roles: [large]}"), path: "vendors[0].models[0].roles[0]", line: 8, message: "must be one of default, small" },
    { name: "an unknown structuredOutput", yaml: vendor("{id: m, label: M, kind: completion, structuredOutput: json}"), path: "vendors[0].models[0].structuredOutput", line: 8, message: "must be one of native, prompted" },
    { name: "zero dimensions", yaml: vendor("{id: m, label: M, kind: embedding, dimensions: 0}"), path: "vendors[0].models[0].dimensions", line: 8, message: "positive" },
    { name: "fractional dimensions", yaml: vendor("{id: m, label: M, kind: embedding, dimensions: 1.5}"), path: "vendors[0].models[0].dimensions", line: 8, message: "integer" },
    { name: "local as a string", yaml: vendor("{id: m, label: M, kind: completion, local: 'yes'}"), path: "vendors[0].models[0].local", line: 8, message: "must be true or false" },
    { name: "an unknown model key", yaml: vendor("{id: m, label: M, kind: completion, context: 8000}"), path: "vendors[0].models[0].context", line: 8, message: 'unknown key "context"' }
  ]
  it.each(rows)("rejects $name", ({ yaml, path, line, message }) => {
    fails(yaml, { path, line, message })
  })

  it("refuses a vendor listed twice, at the second one", () => {
    fails(
      doc(
        "vendors:",
        "  - {id: a, label: A, credential: null, models: [{id: m, label: M, kind: completion}]}",
        "  - {id: b, label: B, credential: null, models: [{id: m, label: M, kind: completion}]}",
        "  - {id: a, label: A2, credential: null, models: [{id: n, label: N, kind: completion}]}"
      ),
      { path: "vendors[2].id", line: 6, message: 'vendor "a" is listed twice (first at vendors[0])' }
    )
  })

  it("refuses a model listed twice in one vendor", () => {
    fails(vendor("{id: m, label: M, kind: completion}", "{id: n, label: N, kind: completion}", "{id: m, label: M again, kind: embedding}"), {
      path: "vendors[0].models[2].id",
      line: 10,
      message: 'model "m" is listed twice in this vendor (first at models[0])'
    })
  })

  it("refuses two models of one kind claiming one role", () => {
    fails(vendor("{id: m, label: M, kind: completion, roles: [default, small]}", "{id: n, label: N, kind: completion, roles: [small]}"), {
      path: "vendors[0].models[1].roles[0]",
      line: 9,
      message: "two completion models claim the role small (also models[0])"
    })
  })
})
