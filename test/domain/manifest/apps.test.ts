/** apps (spec: "apps" table; build configuration defaults to Release). */
import { describe, expect, it } from "vitest"
import { doc, fails, valid, type Row } from "./cases.js"

const app = (...lines: ReadonlyArray<string>) =>
  doc("apps:", "  viewer:", "    name: Viewer", "    description: views", ...lines.map((l) => `    ${l}`))

describe("apps", () => {
  it("accepts a macOS app built from an Xcode project, defaulting configuration to Release", () => {
    const m = valid(
      app(
        "platform: macos",
        "build: {project: mac/Viewer.xcodeproj, scheme: Viewer}",
        "output: build/Viewer.app",
        "id: com.example.viewer",
        "protocol-version: 2",
        "capabilities: {streaming: true, gating: false, listener: true, attachments: true, approvalReview: false, replay: true}",
        "macos: {bundle-id: com.example.viewer, url-schemes: [viewer], login-item: true, keep-alive: false}"
      )
    )
    expect(m.apps?.["viewer"]?.build).toEqual({ project: "mac/Viewer.xcodeproj", scheme: "Viewer", configuration: "Release" })
  })

  it("keeps an explicit configuration", () => {
    const m = valid(app("platform: macos", "build: {project: V.xcodeproj, configuration: Debug}", "output: V.app"))
    expect(m.apps?.["viewer"]?.build).toEqual({ project: "V.xcodeproj", configuration: "Debug" })
  })

  it("accepts an iOS app built by a package script, with protocol 1", () => {
    const m = valid(app("platform: ios", "build: build:ios", "output: dist/Viewer.app/", "protocol-version: 1", "ios: {bundle-id: com.example.v, url-schemes: [v], device: true}"))
    expect(m.apps?.["viewer"]?.build).toBe("build:ios")
  })

  const rows: ReadonlyArray<Row> = [
    { name: "an app without name", yaml: doc("apps:", "  v: {description: d, platform: ios, build: b, output: V.app}"), path: "apps.v.name", line: 4, message: "is required" },
    { name: "an app without description", yaml: doc("apps:", "  v: {name: V, platform: ios, build: b, output: V.app}"), path: "apps.v.description", line: 4, message: "is required" },
    { name: "an app without platform", yaml: app("build: b", "output: V.app"), path: "apps.viewer.platform", line: 5, message: "is required" },
    { name: "an app without build", yaml: app("platform: ios", "output: V.app"), path: "apps.viewer.build", line: 5, message: "is required" },
    { name: "an app without output", yaml: app("platform: ios", "build: b"), path: "apps.viewer.output", line: 5, message: "is required" },
    { name: "an unknown platform", yaml: app("platform: watchos", "build: b", "output: V.app"), path: "apps.viewer.platform", line: 7, message: "must be one of macos, ios" },
    { name: "a project that is not .xcodeproj", yaml: app("platform: macos", "build: {project: V.xcworkspace}", "output: V.app"), path: "apps.viewer.build.project", line: 8, message: "must be an .xcodeproj path" },
    { name: "a build map without project", yaml: app("platform: macos", "build: {scheme: V}", "output: V.app"), path: "apps.viewer.build.project", line: 8, message: "is required" },
    { name: "an unknown build key", yaml: app("platform: macos", "build: {project: V.xcodeproj, target: V}", "output: V.app"), path: "apps.viewer.build.target", line: 8, message: 'unknown key "target"' },
    { name: "a build list", yaml: app("platform: macos", "build: [make]", "output: V.app"), path: "apps.viewer.build", line: 8, message: "a package script name or a map" },
    { name: "an output that is not an .app", yaml: app("platform: macos", "build: b", "output: build/Viewer"), path: "apps.viewer.output", line: 9, message: "must name the .app bundle" },
    { name: "an output outside the bag", yaml: app("platform: macos", "build: b", "output: /Applications/V.app"), path: "apps.viewer.output", line: 9, message: "must be a relative path inside the bag" },
    { name: "protocol-version 3", yaml: app("platform: macos", "build: b", "output: V.app", "protocol-version: 3"), path: "apps.viewer.protocol-version", line: 10, message: "must be 1 (legacy) or 2" },
    { name: "protocol-version as a string", yaml: app("platform: macos", "build: b", "output: V.app", "protocol-version: '2'"), path: "apps.viewer.protocol-version", line: 10, message: "must be 1 (legacy) or 2" },
    { name: "capabilities without protocol-version", yaml: app("platform: macos", "build: b", "output: V.app", "capabilities: {streaming: true}"), path: "apps.viewer.capabilities", line: 10, message: "needs protocol-version" },
    { name: "a capability that is not a boolean", yaml: app("platform: macos", "build: b", "output: V.app", "protocol-version: 2", "capabilities: {streaming: 'yes'}"), path: "apps.viewer.capabilities.streaming", line: 11, message: "must be true or false" },
    { name: "an unknown capability", yaml: app("platform: macos", "build: b", "output: V.app", "protocol-version: 2", "capabilities: {voice: true}"), path: "apps.viewer.capabilities.voice", line: 11, message: 'unknown key "voice"' },
    { name: "a macos block on an iOS app", yaml: app("platform: ios", "build: b", "output: V.app", "macos: {login-item: true}"), path: "apps.viewer.macos", line: 10, message: "does not apply to a ios app" },
    { name: "an ios block on a macOS app", yaml: app("platform: macos", "build: b", "output: V.app", "ios: {device: true}"), path: "apps.viewer.ios", line: 10, message: "does not apply to a macos app" },
    { name: "an iOS key in the macos block", yaml: app("platform: macos", "build: b", "output: V.app", "macos: {device: true}"), path: "apps.viewer.macos.device", line: 10, message: 'unknown key "device"' },
    { name: "device as a string", yaml: app("platform: ios", "build: b", "output: V.app", "ios: {device: 'yes'}"), path: "apps.viewer.ios.device", line: 10, message: "must be true or false" },
    { name: "url-schemes as a string", yaml: app("platform: ios", "build: b", "output: V.app", "ios: {url-schemes: v}"), path: "apps.viewer.ios.url-schemes", line: 10, message: "must be a list" },
    { name: "an unknown app key", yaml: app("platform: ios", "build: b", "output: V.app", "icon: v.png"), path: "apps.viewer.icon", line: 10, message: 'unknown key "icon"' }
  ]
  it.each(rows)("rejects $name", ({ yaml, path, line, message }) => {
    fails(yaml, { path, line, message })
  })
})
