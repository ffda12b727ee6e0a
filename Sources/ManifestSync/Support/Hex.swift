/// Lowercase hex encoding and strict decoding.
enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity(128)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes case-insensitive hex; nil for odd length or any other character.
    static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    /// True when `text` is exactly `length` lowercase hex digits (a safe object file name).
    static func isLowercaseHex(_ text: String, length: Int) -> Bool {
        text.utf8.count == length && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
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

    static func lowercaseDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 48 + nibble : 87 + nibble
    }

    /// The value of a hex digit (either case), or nil.
    @inline(__always)
    static func value(_ char: UInt8) -> UInt8? {
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
