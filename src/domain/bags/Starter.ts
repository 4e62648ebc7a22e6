/**
 * The starter bag `svc new NAME` writes: a manifest `svc bag check` accepts, with one
 * versioned, remote-eligible `node` job that really runs (input on stdin as JSON, result as
 * the last line of stdout; docs/manifest.md, "How a node job runs").
 */
export const starterFiles = (name: string): ReadonlyArray<{ readonly path: string; readonly content: string }> => [
  {
    path: "bag.yaml",
    content: `# The manifest of the ${name} bag. Check it with: svc bag check ${name}
name: ${name}
description: A starter bag made by svc new
version: 0.1.0

jobs:
  checksum:
    description: SHA-256 and length of the text it is given
    # A versioned job is addressed ${name}:checksum@1.0.0 on every machine.
    version: 1.0.0
    runs:
      using: node
      main: jobs/checksum.mjs
    input_schema:
      type: object
      properties:
        text: { type: string }
      required: [text]
      additionalProperties: false
    output_schema:
      type: object
      properties:
        sha256: { type: string, pattern: "^[0-9a-f]{64}$" }
        length: { type: integer, minimum: 0 }
      required: [sha256, length]
      additionalProperties: false
    timeout: 30s
`
  },
  {
    path: "jobs/checksum.mjs",
    content: `// The checksum job: reads its input as JSON on stdin, prints its result as one JSON line
// on stdout (the last line is the result; anything logged before it, or on stderr, is output).
import { createHash } from "node:crypto"

let input = ""
process.stdin.setEncoding("utf8")
for await (const chunk of process.stdin) input += chunk
const { text } = JSON.parse(input)
const sha256 = createHash("sha256").update(text, "utf8").digest("hex")
console.error(\`hashing \${text.length} characters\`)
console.log(JSON.stringify({ sha256, length: text.length }))
`
  },
  {
    path: "README.md",
    content: `# ${name}

A bag made by \`svc new\`. Its job \`checksum\` (version 1.0.0) returns the SHA-256 of a text.

    svc bag check ${name}     # validate the manifest and the files it names
    svc bag install ${name}   # install it into $SVC_HOME
    svc bag show ${name}      # its jobs, their addresses, digests and remote eligibility

Run the job by hand: \`echo '{"text":"hello"}' | node jobs/checksum.mjs\`
`
  }
]
