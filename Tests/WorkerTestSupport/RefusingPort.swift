import Glibc

/// A loopback port that refuses every connection for as long as it is held: a socket bound to it
/// that never listens. Bound, the port cannot be handed to another socket of the test run (a port
/// bound, closed and then used was once given to another test's server meanwhile, which answered
/// the "refused" requests with 404s). Call `release()` when the test is done with it.
public final class RefusingPort: @unchecked Sendable {
    // Immutable after init but the descriptor, which only `release` touches.
    public let port: Int
    private var fd: Int32

    public init() {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(fd >= 0, "socket: \(errno)")
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        precondition(bound, "bind: \(errno)")
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// `http://127.0.0.1:PORT`.
    public var origin: String { "http://127.0.0.1:\(port)" }

    /// Lets the port go (also done when the value is released).
    public func release() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    deinit {
        release()
    }
}
