import CCurl

/// Easy handles kept between plain GETs, on a libcurl that can reuse one safely.
///
/// A new handle per transfer costs its `curl_easy_init` (a zeroed state of several KiB), its
/// options, its 64 KiB receive buffer and its cleanup: 6 % of a cold sync's instructions
/// (BENCHMARKS.md as of 278b2e0, "A handle kept between plain GETs"). libcurl before 8.1.0 (Debian 12 ships
/// 7.88.1) keeps a pointer to the previous response's last header across transfers and follows it
/// when a response on the reused handle begins with a folded header line — a crash any server
/// could cause (curl issue 11101, fixed in 8.1.0) — so there every transfer gets a new handle.
///
/// Only a plain GET takes a kept handle and only a plain GET's handle is kept: a HEAD, a PUT, a
/// request with its own timeouts or signing sets options a later GET would inherit. A plain GET
/// sets everything it uses (URL, headers, callbacks' context) on every start. Engine's thread only.
struct HandlePool {
    /// The first libcurl that clears the stale header pointer when a transfer starts.
    static let firstSafeVersion: UInt32 = 0x08_01_00
    /// Idle handles kept at most; one more is cleaned up (each holds its receive buffer).
    static let capacity = 64

    /// Whether handles may be reused with libcurl `version` (0xXXYYZZ).
    static func reusesHandles(libcurlVersion version: UInt32) -> Bool {
        version >= firstSafeVersion
    }

    /// Off: every transfer gets a new handle, cleaned up when it ends.
    let enabled: Bool
    private var idle: [UnsafeMutableRawPointer] = []

    init(enabled: Bool) {
        self.enabled = enabled
    }

    var idleCount: Int { idle.count }

    /// A kept handle for a plain GET, or nil (make a new one).
    mutating func take(forPlainGet plainGet: Bool) -> UnsafeMutableRawPointer? {
        guard enabled, plainGet else { return nil }
        return idle.popLast()
    }

    /// Keeps the handle of a transfer that ended (removed from the multi handle and detached)
    /// when it is `reusable`, or cleans it up.
    mutating func giveBack(_ handle: UnsafeMutableRawPointer, reusable: Bool) {
        guard enabled, reusable, idle.count < Self.capacity else {
            worker_curl_easy_cleanup(handle)
            return
        }
        idle.append(handle)
    }

    /// Cleans up every kept handle (the engine stops).
    mutating func drain() {
        for handle in idle { worker_curl_easy_cleanup(handle) }
        idle.removeAll()
    }
}
