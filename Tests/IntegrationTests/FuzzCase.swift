import Foundation

/// One iteration of the response fuzzer: the content an entry names, whether it is pinned by hash,
/// a kept part to resume (its length), and the answers the server gives, each with the bodies a
/// correct client may store from it (what its own framing declares).
struct FuzzCase: CustomStringConvertible {
    struct Answer {
        let raw: RawOrigin.Answer
        /// Bodies a client may store from this answer: none for an answer that is not content
        /// (an error status, a coding nobody asked for, framing that contradicts itself or was cut).
        let declares: [[UInt8]]
        let summary: String
    }

    let number: Int
    let content: [UInt8]
    let hashed: Bool
    let kept: Int?
    let answers: [Answer]

    var acceptable: [[UInt8]] { answers.flatMap(\.declares) }

    var description: String {
        "  content \(content.count) bytes, \(hashed ? "hashed" : "hashless"), kept part \(kept.map(String.init) ?? "none")\n"
            + answers.enumerated().map { "  answer \($0.offset + 1): \($0.element.summary)" }.joined(separator: "\n")
    }

    static func make(number: Int, random: inout SplitMix64) -> FuzzCase {
        let resumes = Int.random(in: 0..<6, using: &random) == 0
        let size = resumes ? (1 << 20) + Int.random(in: 1000...200_000, using: &random) : Int.random(in: 0...3000, using: &random)
        let content = (0..<size).map { UInt8(truncatingIfNeeded: ($0 &* 131) ^ number) }
        let kept = resumes ? (1 << 20) + Int.random(in: 0..<500, using: &random) : nil
        let count = Int.random(in: 1...2, using: &random)
        let answers = (0..<count).map { _ in answer(content: content, kept: kept, random: &random) }
        return FuzzCase(number: number, content: content, hashed: Bool.random(using: &random), kept: kept, answers: answers)
    }

    // MARK: - Generation

    private static func pick<T>(_ options: [T], _ random: inout SplitMix64) -> T {
        options[Int.random(in: 0..<options.count, using: &random)]
    }

    private static func chance(_ oneIn: Int, _ random: inout SplitMix64) -> Bool {
        Int.random(in: 0..<oneIn, using: &random) == 0
    }

    /// One generated answer and what it declares.
    static func answer(content: [UInt8], kept: Int?, random: inout SplitMix64) -> Answer {
        let partial = kept != nil && chance(2, &random)
        var status = partial ? 206 : pick([200, 200, 200, 200, 203, 204, 206, 304, 416, 500, 503, 100, 999], &random)
        var head = ""
        // An interim 1xx head first, sometimes.
        if chance(8, &random) { head += pick(["HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"], &random) }
        let version = pick(["HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0"], &random)
        if status == 100 { status = 200; head += "HTTP/1.1 100 Continue\r\n\r\n" }
        head += "\(version) \(status) \(chance(10, &random) ? "" : "Reason")\r\n"
        var headers: [String] = []
        var notes: [String] = []

        // The bytes the body is about: the whole content, or the rest after the kept part.
        let offset = partial ? kept! : 0
        let payload = Array(content[offset...])

        // Content-Length: right, wrong, twice, malformed or huge.
        let lengthChoice = pick(["right", "right", "right", "none", "short", "long", "twice-same", "twice-different",
                                 "huge", "overflow", "signed", "list"], &random)
        var declaredLength: Int?? = .some(nil)  // .none: contradictory; .some(nil): absent
        switch lengthChoice {
        case "right": headers.append("Content-Length: \(payload.count)"); declaredLength = .some(payload.count)
        case "short" where !payload.isEmpty:
            let length = Int.random(in: 0..<payload.count, using: &random)
            headers.append("Content-Length: \(length)"); declaredLength = .some(length)
        case "long": headers.append("Content-Length: \(payload.count + 1 + Int.random(in: 0...100, using: &random))"); declaredLength = .some(payload.count + 1_000_000_000)
        case "twice-same": headers += ["Content-Length: \(payload.count)", "Content-Length: \(payload.count)"]; declaredLength = .some(payload.count)
        case "twice-different": headers += ["Content-Length: \(payload.count)", "Content-Length: \(payload.count + 1)"]; declaredLength = .none
        case "huge": headers.append("Content-Length: 9223372036854775807"); declaredLength = .none
        case "overflow": headers.append("Content-Length: 99999999999999999999999"); declaredLength = .none
        case "signed": headers.append("Content-Length: +\(payload.count)"); declaredLength = .none
        case "list": headers.append("Content-Length: \(payload.count), \(payload.count)"); declaredLength = .some(payload.count)
        default: break
        }
        notes.append("length \(lengthChoice)")

        // Content-Range on 206s (right or wrong), sometimes elsewhere.
        var rangeRight = false
        if status == 206 || chance(10, &random) {
            let total = content.count
            let choice = pick(["right", "right", "right", "start", "end", "total", "star", "huge", "garbage", "twice"], &random)
            switch choice {
            case "right": headers.append("Content-Range: bytes \(offset)-\(total - 1)/\(total)"); rangeRight = true
            case "start": headers.append("Content-Range: bytes \(offset + 1)-\(total - 1)/\(total)")
            case "end": headers.append("Content-Range: bytes \(offset)-\(total + 99)/\(total + 100)")
            case "total": headers.append("Content-Range: bytes \(offset)-\(total - 1)/\(total + 7)")
            case "star": headers.append("Content-Range: bytes \(offset)-\(total - 1)/*")
            case "huge": headers.append("Content-Range: bytes \(offset)-9223372036854775806/9223372036854775807")
            case "garbage": headers.append("Content-Range: bytes=\(offset)-")
            default: headers += ["Content-Range: bytes \(offset)-\(total - 1)/\(total)", "Content-Range: bytes 0-\(total - 1)/\(total)"]
            }
            notes.append("range \(choice)")
        }

        // Codings.
        var coded = false
        if chance(6, &random) {
            let value = pick(["identity", "gzip", "identity, gzip", "br", "", "x\u{1b}[31m"], &random)
            headers.append("Content-Encoding: \(value)")
            if !["identity", ""].contains(value) { coded = true }
            if chance(3, &random) { headers.append("Content-Encoding: gzip"); coded = true }
            notes.append("content-encoding \(value)")
        }
        var chunked = false
        if version == "HTTP/1.1", chance(5, &random) {
            let value = pick(["chunked", "chunked", "gzip, chunked", "identity, chunked"], &random)
            headers.append("Transfer-Encoding: \(value)")
            chunked = true
            if value.contains("gzip") { coded = true }
            notes.append("transfer-encoding \(value)")
        }
        // Validators and the rest.
        headers.append(pick(["ETag: \"v1\"", "ETag: \"v1\"", "ETag: W/\"v1\"", "ETag: \"a\u{1}b\"", "Last-Modified: Tue, 01 Jan 2030 00:00:00 GMT"], &random))
        if status == 503 || chance(10, &random) {
            // Values that do not parse as delay-seconds are ignored; a date long past is no wait. (A
            // far-future date pauses the whole origin for up to 30 s, by design: not generated.)
            headers.append("Retry-After: " + pick(["0", "nan", "inf", "1e300", "-5", "99999999999999999999", "Sun, 06 Nov 1994 08:49:37 GMT"], &random))
        }
        headers.append("Connection: close")
        headers.shuffle(using: &random)

        // The body as framed on the wire, and how much of the answer is sent.
        var body: [UInt8]
        var framingValid = true
        if chunked {
            let chunkChoice = pick(["valid", "valid", "valid", "overflow", "negative", "garbage", "unterminated"], &random)
            notes.append("chunks \(chunkChoice)")
            switch chunkChoice {
            case "overflow": body = Array("ffffffffffffffffffff\r\n".utf8) + payload + Array("\r\n0\r\n\r\n".utf8); framingValid = false
            case "negative": body = Array("-1\r\n".utf8) + payload + Array("\r\n0\r\n\r\n".utf8); framingValid = false
            case "garbage": body = Array("zz\r\n".utf8) + payload; framingValid = false
            case "unterminated": body = Array(String(payload.count, radix: 16).utf8) + [13, 10] + payload + [13, 10]; framingValid = false
            default: body = Array(String(payload.count, radix: 16).utf8) + [13, 10] + payload + Array("\r\n0\r\n\r\n".utf8)
            }
        } else {
            body = payload
        }
        let whole = Array((head + headers.joined(separator: "\r\n") + "\r\n\r\n").utf8) + body
        var cut: Int?
        var stall: Int?
        if chance(8, &random) { cut = Int.random(in: 0..<max(whole.count, 1), using: &random); notes.append("closed after \(cut!) bytes") }
        else if chance(40, &random) { stall = Int.random(in: 0..<max(whole.count, 1), using: &random); notes.append("stalls after \(stall!) bytes") }
        let raw = RawOrigin.Answer(Array(whole.prefix(cut ?? whole.count)), stallAfter: stall)

        // What a correct client may store from it.
        var declares: [[UInt8]] = []
        let headLength = whole.count - body.count
        let bodySent = max(0, min(cut ?? stall ?? whole.count, whole.count) - headLength)
        let sentComplete = cut == nil && stall == nil
        if !coded, case .some(let length) = declaredLength, version != "HTTP/1.0" || !chunked {
            if partial, status == 206 {
                // The rest of the kept part: only as a range that starts there and ends the body.
                if rangeRight, length == nil || length == payload.count, sentComplete, framingValid, !chunked || length == nil || length == payload.count {
                    declares = [content]
                }
            } else if status == 200 || status == 203 {
                if chunked {
                    if framingValid, sentComplete, length == nil || length == payload.count { declares = [payload] }
                } else if let length {
                    if bodySent >= length { declares = [Array(payload.prefix(length))] }
                } else {
                    declares = [Array(payload.prefix(bodySent))]
                }
            }
        }
        let summary = "\(version) \(status), " + notes.joined(separator: ", ") + " — declares \(declares.map { "\($0.count) bytes" })"
        return Answer(raw: raw, declares: declares, summary: summary)
    }
}
