/** `ManifestSource` backed by the `yaml` package (positions) and the library validators. */
import * as Layer from "effect/Layer"
import { ManifestSource } from "../../app/bags/ManifestSource.js"
import { formatValidators } from "./FormatValidators.js"
import { parseManifest } from "./YamlManifest.js"

export const layer = Layer.succeed(ManifestSource, { parse: parseManifest, validators: formatValidators })
