/// Why a `--remote-cache` setting was refused (a usage error).
public struct RemoteCacheProblem: Error, Sendable, Equatable {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }
}
