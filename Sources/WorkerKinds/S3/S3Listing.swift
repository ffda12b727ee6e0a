import WorkerSupport

/// One page of a bucket's listing (S3's ListObjectsV2 answer, `ListBucketResult`): the objects
/// and the token of the next page. S3's XML is flat and fixed, so it is read by its element names
/// alone; the five entities XML predefines and character references are decoded.
public struct S3ListingPage: Sendable, Equatable {
    public struct Object: Sendable, Equatable {
        public var key: String
        public var etag: String
        public var size: Int64
        public var lastModified: String
        /// The checksum algorithms S3 stores for it (`ChecksumAlgorithm`, e.g. SHA256, CRC32).
        var checksumAlgorithms: [String]

        public init(key: String, etag: String, size: Int64, lastModified: String, checksumAlgorithms: [String]) {
            self.key = key
            self.etag = etag
            self.size = size
            self.lastModified = lastModified
            self.checksumAlgorithms = checksumAlgorithms
        }

        /// The bucket stores the object's SHA-256 (a HEAD in checksum mode returns it).
        var hasSHA256: Bool { checksumAlgorithms.contains { $0.uppercased() == "SHA256" } }
    }

    public var objects: [Object] = []
    /// Set when the listing goes on: the `continuation-token` of the next page.
    public var nextToken: String?

    /// Reads a `ListBucketResult` document; nil when it is not one (an error document, HTML).
    public static func parse(_ xml: String) -> S3ListingPage? {
        guard xml.contains("<ListBucketResult") else { return nil }
        var page = S3ListingPage()
        var rest = Substring(xml)
        while let contents = element("Contents", in: &rest) {
            var fields = contents
            var object = Object(key: "", etag: "", size: -1, lastModified: "", checksumAlgorithms: [])
            var scan = fields
            while let algorithm = element("ChecksumAlgorithm", in: &scan) { object.checksumAlgorithms.append(decoded(algorithm)) }
            guard let key = element("Key", in: &fields) else { return nil }
            object.key = decoded(key)
            fields = contents
            object.etag = element("ETag", in: &fields).map(decoded) ?? ""
            fields = contents
            object.lastModified = element("LastModified", in: &fields).map(decoded) ?? ""
            fields = contents
            guard let size = element("Size", in: &fields).flatMap({ Int64($0) }), size >= 0 else { return nil }
            object.size = size
            page.objects.append(object)
        }
        var whole = Substring(xml)
        let truncated = element("IsTruncated", in: &whole) == "true"
        whole = Substring(xml)
        if truncated {
            guard let token = element("NextContinuationToken", in: &whole).map(decoded), !token.isEmpty else { return nil }
            page.nextToken = token
        }
        return page
    }

    /// The text of the next `<name>…</name>` in `text` (also `<name attr…>`), and `text` moved past
    /// it; nil when there is none.
    private static func element(_ name: String, in text: inout Substring) -> Substring? {
        let open = "<" + name
        while let start = text.firstRange(of: open) {
            let after = text[start.upperBound...]
            guard let next = after.first else { return nil }
            guard next == ">" || next == " " || next == "/" else {
                text = after
                continue
            }
            if next == "/" {
                // `<name/>`: empty.
                text = after.dropFirst()
                return ""
            }
            guard let close = after.firstIndex(of: ">"), let end = after[close...].firstRange(of: "</" + name + ">") else { return nil }
            let body = after[after.index(after: close)..<end.lowerBound]
            text = after[end.upperBound...]
            return body
        }
        return nil
    }

    /// XML's predefined entities and character references decoded.
    static func decoded(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
        var out = ""
        var rest = text
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semicolon = rest[amp...].firstIndex(of: ";"), rest.distance(from: amp, to: semicolon) <= 10 else {
                out += "&"
                rest = rest[rest.index(after: amp)...]
                continue
            }
            let name = rest[rest.index(after: amp)..<semicolon]
            switch name {
            case "amp": out += "&"
            case "lt": out += "<"
            case "gt": out += ">"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                let number =
                    name.hasPrefix("#x")
                    ? UInt32(name.dropFirst(2), radix: 16)
                    : name.hasPrefix("#") ? UInt32(name.dropFirst(), radix: 10) : nil
                if let number, let scalar = Unicode.Scalar(number) {
                    out.unicodeScalars.append(scalar)
                } else {
                    out += "&" + name + ";"
                }
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return out + rest
    }
}
