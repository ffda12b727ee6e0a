import Foundation
import WorkerTestSupport

@testable import WorkerManifest

/// Loads manifest text; returns the set or the diagnostics.
func load(
    _ text: String, name: String = "m.yaml", environment: [String: String] = [:],
    in directory: TemporaryDirectory = TemporaryDirectory()
) -> Result<ManifestSet, ManifestErrors> {
    let path = directory.write(name, text)
    do {
        return .success(try ManifestLoader(environment: environment).load(paths: [path]))
    } catch {
        return .failure(error)
    }
}

/// The diagnostics of a manifest that must fail, as `line:column: message` strings without the path.
func problems(_ text: String, environment: [String: String] = [:]) -> [String] {
    switch load(text, environment: environment) {
    case .success: return []
    case .failure(let errors): return errors.diagnostics.map { "\($0.line):\($0.column): \($0.message)" }
    }
}

let sha256OfTest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
