import WorkerSupport

/// A manifest problem with the place it was found, printed as `path:line:column: message`.
public struct ManifestDiagnostic: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as far as the rest of the load cares.
    public enum Kind: Sendable, Equatable {
        /// The file could not be opened or read: nothing in it was checked.
        case unreadable
        /// libyaml gave up: the file ends at this point, later problems are unknown.
        case syntax
        /// The YAML is well-formed but a key, a value or an entry is wrong.
        case content
    }

    public let kind: Kind
    public let path: String
    /// 1-based; 0 when the problem has no position (the file could not be read).
    public let line: Int
    public let column: Int
    public let message: String

    public init(path: String, line: Int, column: Int, message: String, kind: Kind = .content) {
        self.kind = kind
        self.path = path
        self.line = line
        self.column = column
        self.message = message
    }

    public var description: String {
        line > 0 ? "\(path):\(line):\(column): \(message)" : "\(path): \(message)"
    }
}

/// One or more manifest problems; the run stops before any network or cache access.
public struct ManifestErrors: Error, Sendable, CustomStringConvertible {
    public let diagnostics: [ManifestDiagnostic]
    /// True when more problems were found than `diagnostics` holds.
    public let truncated: Bool

    public var description: String {
        diagnostics.map(\.description).joined(separator: "\n") + (truncated ? "\n(more errors not shown)" : "")
    }

    public init(diagnostics: [ManifestDiagnostic], truncated: Bool) {
        self.diagnostics = diagnostics
        self.truncated = truncated
    }
}

/// Manifests that cannot be used end the run as input that cannot be used, every problem located.
extension ManifestErrors: ExitClassified {
    public var exitClass: ExitClass { .usage }
    public var exitMessage: String { description }
}
