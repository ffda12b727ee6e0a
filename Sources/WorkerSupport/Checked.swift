/// Numbers from outside — header values, index columns, option values — turned into the integers
/// the code computes with. Swift traps on overflow and on converting a Double that does not fit:
/// every such number goes through here (or through a `…ReportingOverflow` of its own) first.
public enum Checked {
    /// An HTTP decimal (`Content-Length`, a `Content-Range` bound, `Retry-After` seconds): digits
    /// only, no sign or spaces inside, and small enough for Int64 (at most 18 digits).
    public static func decimal(_ text: some StringProtocol) -> Int64? {
        decimal(digits: text.utf8)
    }

    /// `decimal` of UTF-8 bytes.
    public static func decimal(digits utf8: some Collection<UInt8>) -> Int64? {
        utf8.withContiguousStorageIfAvailable(decimal(bytes:)) ?? Array(utf8).withUnsafeBufferPointer(decimal(bytes:))
    }

    /// `decimal` of bytes in memory. Not generic: a caller in another module calls it directly (a
    /// generic one ran unspecialized there, a protocol call per byte, for every response).
    public static func decimal(bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
        var value: Int64 = 0
        for byte in bytes {
            guard byte >= 48, byte <= 57 else { return nil }
            value = value * 10 + Int64(byte - 48)
        }
        return value
    }

    /// `a + b`, or nil when it overflows.
    static func sum(_ a: Int64, _ b: Int64) -> Int64? {
        let (value, overflow) = a.addingReportingOverflow(b)
        return overflow ? nil : value
    }

    /// `a + b`, held at Int64.max (a total of sizes from a tampered index stays a number).
    public static func saturatingSum(_ a: Int64, _ b: Int64) -> Int64 {
        let (value, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b < 0 ? Int64.min : Int64.max) : value
    }

    /// A Double as Int64 when it is finite and fits, else nil.
    public static func int64(_ value: Double) -> Int64? {
        guard value.isFinite, value > -9.2e18, value < 9.2e18 else { return nil }
        return Int64(value)
    }

    /// `seconds` as whole milliseconds rounded up, within 0...limit (NaN and infinities too).
    public static func milliseconds(_ seconds: Double, upTo limit: Int) -> Int {
        let value = (seconds * 1000).rounded(.up)
        guard value > 0 else { return 0 }
        guard value < Double(limit) else { return limit }
        return Int(value)
    }
}
