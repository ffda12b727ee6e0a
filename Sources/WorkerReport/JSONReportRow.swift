import FoundationEssentials
import WorkerFetch
import WorkerPlan

/// One report row as the JSON report spells it: JSONEncoder's pretty-printed output with sorted
/// keys and unescaped slashes, byte for byte (`JSONReportWriterTests` holds it to JSONEncoder's
/// own encoding, every control character included), indented for its place in the `entries`
/// array. Written by hand because JSONEncoder took ~19 µs a row: 19 s of a million-row report.
enum JSONReportRow {
    /// Appends `row`, from its `{` to its `}`, each line indented by four spaces.
    static func append(_ row: SyncReport.Entry, to out: inout [UInt8]) {
        out.append(contentsOf: open)
        var first = true
        func key(_ name: StaticString) {
            out.append(contentsOf: first ? firstKey : nextKey)
            first = false
            out.append(contentsOf: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            out.append(contentsOf: separator)
        }
        func text(_ name: StaticString, _ value: String?) {
            guard let value else { return }
            key(name)
            string(value, to: &out)
        }
        func number(_ name: StaticString, _ value: Int64?) {
            guard let value else { return }
            key(name)
            out.append(contentsOf: String(value).utf8)
        }
        // In the order of the keys' names (`.sortedKeys`); an absent value has no key.
        text("actual_hash", row.actualHash)
        number("attempts", row.attempts.map(Int64.init))
        number("bytes", row.bytes)
        text("error", row.error)
        text("hash", row.hash)
        number("http_status", row.httpStatus.map(Int64.init))
        text("manifest", row.manifest)
        text("path", row.path)
        text("previous_hash", row.previousHash)
        text("previous_path", row.previousPath)
        text("reason", row.reason?.rawValue)
        text("refetched", row.refetched)
        text("served_by", row.servedBy)
        text("source", row.source?.rawValue)
        if let stale = row.stale {
            key("stale")
            out.append(contentsOf: (stale ? "true" : "false").utf8)
        }
        text("status", row.status.rawValue)
        text("url", row.url)
        out.append(contentsOf: close)
    }

    /// A JSON string: `"` and `\` escaped, control characters as JSONEncoder writes them.
    static func string(_ value: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most values (URLs, hashes, paths) need no escape: copied whole.
        var value = value
        let copied = value.withUTF8 { bytes in
            guard !needsEscape(bytes) else { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if copied { return out.append(UInt8(ascii: "\"")) }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0..<0x20:
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Whether `bytes` hold a byte a JSON string must escape: a control character, `"` or `\`.
    /// Read eight bytes at a time (each word tested for a byte below 0x20, or equal to either, with
    /// the usual bit tricks: exact, no false positives), the rest one by one.
    static func needsEscape(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var index = 0
        while index + 8 <= bytes.count {
            let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
            let control = (word &- ones &* 0x20) & ~word & highs
            let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
            let equal = ((quote &- ones) & ~quote | (backslash &- ones) & ~backslash) & highs
            if control | equal != 0 { return true }
            index += 8
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return true }
            index += 1
        }
        return false
    }

    private static let open = Array("    {".utf8)
    private static let firstKey = Array("\n      \"".utf8)
    private static let nextKey = Array(",\n      \"".utf8)
    private static let separator = Array("\" : ".utf8)
    private static let close = Array("\n    }".utf8)
    private static let hexDigits = Array("0123456789abcdef".utf8)
}
