/// Why a `--remote-cache` setting was refused (a usage error).
package struct RemoteCacheProblem: Error, Sendable, Equatable {
    package let message: String

    package init(_ message: String) {
        self.message = message
    }
}
