import Foundation
import Synchronization

/// A loopback HTTP/1.1 server that answers with bytes given verbatim — status lines, header sets
/// and framing no well-behaved server library would write (for hostile-server tests and the
/// response fuzzer). Each request path has a script: the n-th request gets the n-th answer (the
/// last one repeats). An answer is written whole, then the connection is closed (or, for a
/// `keepAlive` answer, the next request is read from it), or it is sent only in part and then held
/// open (`stallAfter`).
final class RawOrigin: Sendable {
    struct Answer: Sendable {
        var bytes: [UInt8]
        /// Send this many bytes, then nothing more until the client goes (a stalled body).
        var stallAfter: Int?
        /// After the whole answer, the connection stays open for the client's next request (the
        /// answer's own framing must say where it ends).
        var keepAlive: Bool

        init(_ bytes: [UInt8], stallAfter: Int? = nil, keepAlive: Bool = false) {
            self.bytes = bytes
            self.stallAfter = stallAfter
            self.keepAlive = keepAlive
        }

        init(_ head: String, body: [UInt8] = [], stallAfter: Int? = nil, keepAlive: Bool = false) {
            self.init(Array(head.utf8) + body, stallAfter: stallAfter, keepAlive: keepAlive)
        }
    }

    private struct State {
        var scripts: [String: [Answer]] = [:]
        var hits: [String: Int] = [:]
        /// Each request's head, by path, in order.
        var requests: [String: [String]] = [:]
        var connections = 0
        var stopped = false
    }

    private let state = Mutex(State())
    private let listener: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Answers requests for `path` with `answers`, in order (the last repeats).
    func script(_ path: String, _ answers: [Answer]) {
        state.withLock { $0.scripts[path] = answers }
    }

    func hits(_ path: String) -> Int { state.withLock { $0.hits[path] ?? 0 } }
    func requests(_ path: String) -> [String] { state.withLock { $0.requests[path] ?? [] } }
    /// Connections accepted so far, and requests read over all of them.
    var connections: Int { state.withLock { $0.connections } }
    var requestCount: Int { state.withLock { $0.hits.values.reduce(0, +) } }

    func stop() {
        state.withLock { $0.stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            state.withLock { $0.connections += 1 }
            let thread = Thread { [self] in serve(client) }
            thread.start()
        }
    }

    /// Reads a request head and writes its answer; then closes, reads the next request on the same
    /// connection (a `keepAlive` answer), or holds a stalled answer open until the client closes or
    /// the server stops.
    private func serve(_ client: Int32) {
        defer { close(client) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var end = received.endOfHead()
            while end == nil {
                let count = read(client, &buffer, buffer.count)
                guard count > 0 else { return }
                received += buffer[0..<count]
                if received.count > 65536 { return }
                end = received.endOfHead()
            }
            let head = String(decoding: received[..<end!], as: UTF8.self)
            received.removeFirst(end!)
            let target = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
            let path = String(target.split(separator: "?").first ?? "")
            let answer: Answer? = state.withLock { state in
                let count = state.hits[path, default: 0]
                state.hits[path] = count + 1
                state.requests[path, default: []].append(head)
                guard let script = state.scripts[path], !script.isEmpty else { return nil }
                return script[min(count, script.count - 1)]
            }
            let bytes = answer?.bytes ?? Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
            let sent = min(answer?.stallAfter ?? bytes.count, bytes.count)
            var offset = 0
            while offset < sent {
                // MSG_NOSIGNAL: a client that went away must not end the test process with SIGPIPE.
                let count = bytes.withUnsafeBytes { send(client, $0.baseAddress! + offset, sent - offset, Int32(MSG_NOSIGNAL)) }
                guard count > 0 else { return }
                offset += count
            }
            if answer?.stallAfter != nil {
                // Stalled: wait for the client to give up (a read of 0 or an error), bounded by the timeout.
                while !state.withLock({ $0.stopped }), read(client, &buffer, buffer.count) > 0 {}
                return
            }
            if answer?.keepAlive == true { continue }
            shutdown(client, Int32(SHUT_WR))
            // Let the client read to the end before the close (a reset could cut what was sent).
            while read(client, &buffer, buffer.count) > 0 {}
            return
        }
    }
}

extension Array where Element == UInt8 {
    /// Where a request head ends (after its blank line), or nil while it is incomplete.
    fileprivate func endOfHead() -> Int? {
        guard count >= 4 else { return nil }
        for index in 0...(count - 4) where self[index] == 13 && self[index + 1] == 10 && self[index + 2] == 13 && self[index + 3] == 10 {
            return index + 4
        }
        return nil
    }
}
