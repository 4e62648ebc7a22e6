// Writes docs/openapi.json from the HttpApi declaration of the worker route (run after build).
import { writeFileSync } from "node:fs"
import { openApiDocument } from "../dist/infra/http/WorkerApi.js"

writeFileSync(new URL("../docs/openapi.json", import.meta.url), JSON.stringify(openApiDocument(), null, 2) + "\n")
console.log("wrote docs/openapi.json")
