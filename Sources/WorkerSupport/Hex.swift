/// The one hex codec: lowercase encoding and strict decoding, for strings and, in place, for
/// buffers (a digest's text is written and read without an intermediate array).
public enum Hex {
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let bytes = Array(bytes)
        return String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            bytes.withUnsafeBytes { encode($0, into: out, at: 0) }
        }
    }

    /// Writes `bytes` as lowercase hex into `out` from `start`; returns the index after the last digit.
    @discardableResult
    public static func encode(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        precondition(start >= 0 && out.count - start >= bytes.count * 2, "no room for the hex digits")
        guard let base = out.baseAddress else { return start }
        // Checked once above, then written through the pointer (a digest's 64 digits are written
        // for every file; a bounds check per digit was most of it).
        var digit = base + start
        for byte in bytes {
            digit[0] = lowercaseDigit(byte >> 4)
            digit[1] = lowercaseDigit(byte & 0x0f)
            digit += 2
        }
        return start + bytes.count * 2
    }

    /// Decodes case-insensitive hex; nil for odd length or any other character.
    public static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8](repeating: 0, count: utf8.count / 2)
        let decoded = utf8.withUnsafeBufferPointer { digits in
            out.withUnsafeMutableBytes { decode(digits, into: $0) }
        }
        return decoded ? out : nil
    }

    /// Decodes case-insensitive hex `digits` (an even count) into the first bytes of `out`;
    /// false at any other character.
    public static func decode(_ digits: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard digits.count % 2 == 0, out.count >= digits.count / 2 else { return false }
        var offset = 0
        while offset * 2 < digits.count {
            guard let high = value(digits[offset * 2]), let low = value(digits[offset * 2 + 1]) else { return false }
            out[offset] = high << 4 | low
            offset += 1
        }
        return true
    }

    /// Decodes exactly `out.count * 2` lowercase hex `digits` into `out`; false for another
    /// count or any other character. One loop in this module, where the digit rule inlines: the
    /// index's and the manifests' digests (a million of each in a large run) are read through it.
    public static func decodeLowercase(_ digits: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard digits.count == out.count * 2 else { return false }
        var invalid: UInt8 = 0
        for offset in 0..<out.count {
            out[offset] = lowercaseNibble(digits[offset &* 2], &invalid) << 4 | lowercaseNibble(digits[offset &* 2 &+ 1], &invalid)
        }
        return invalid == 0
    }

    /// True when `text` is exactly `length` lowercase hex digits (a safe object file name).
    public static func isLowercaseHex(_ text: String, length: Int) -> Bool {
        guard text.utf8.count == length else { return false }
        var text = text
        return text.withUTF8 { bytes in
            var invalid: UInt8 = 0
            for byte in bytes { _ = lowercaseNibble(byte, &invalid) }
            return invalid == 0
        }
    }

    /// The value of a lowercase hex digit, without branches; sets `invalid` for any other byte.
    @inline(__always)
    static func lowercaseNibble(_ char: UInt8, _ invalid: inout UInt8) -> UInt8 {
        let digit = char &- 48
        let letter = char &- 97
        let isDigit: UInt8 = digit < 10 ? 1 : 0
        let isLetter: UInt8 = letter < 6 ? 1 : 0
        invalid |= 1 &- (isDigit | isLetter)
        return isDigit == 1 ? digit : letter &+ 10
    }

    public static func lowercaseDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 48 + nibble : 87 + nibble
    }

    /// The value of a hex digit (either case), or nil.
    @inline(__always)
    public static func value(_ char: UInt8) -> UInt8? {
        let value = table[Int(char)]
        return value == 0xff ? nil : value
    }

    private static let table: [UInt8] = (0..<256).map { char in
        switch char {
        case 48...57: UInt8(char - 48)
        case 65...70: UInt8(char - 55)
        case 97...102: UInt8(char - 87)
        default: 0xff
        }
    }
}
