import Foundation
import WorkerTestSupport

/// One iteration of the response fuzzer: the content an entry names, whether it is pinned by hash,
/// a kept part to resume (its length), and the answers the server gives, in order (the last one
/// repeats). `FuzzModel` decides from them what the run must end with for the entry.
struct FuzzCase: CustomStringConvertible {
    let number: Int
    let content: [UInt8]
    let hashed: Bool
    let kept: Int?
    let answers: [FuzzAnswer]

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
        let answers = (0..<count).map { _ in FuzzAnswer.make(content: content, kept: kept, random: &random) }
        return FuzzCase(number: number, content: content, hashed: Bool.random(using: &random), kept: kept, answers: answers)
    }
}

/// One generated answer: its parts as generated (what the model reads) and its bytes on the wire.
struct FuzzAnswer {
    enum Length: String { case right, none, short, long, twiceSame, twiceDifferent, huge, overflow, signed, list }
    enum Range: String { case right, start, end, total, star, huge, garbage, twice }
    enum Chunks: String { case valid, overflow, negative, garbage, unterminated }
    enum Fold { case first, continuation }
    enum Validator { case strong, weak, control, lastModified }

    var interim: Bool
    /// A 103 Early Hints head with a header came first.
    var earlyHints: Bool
    var version: String
    var status: Int
    /// The body is the rest after the kept part (a 206 to a resumed request), from this offset.
    var offset: Int
    var payload: [UInt8]
    var length: Length
    /// The number a right, short or long Content-Length gives; for two different ones, the one
    /// sent last.
    var lengthValue: Int
    var range: Range?
    var coded: Bool
    var chunks: Chunks?
    var fold: Fold?
    var validator: Validator
    /// How many bytes of the answer are sent before the server closes or stalls.
    var cut: Int?
    var stall: Int?
    var keepAlive: Bool
    var notes: [String]

    var raw: RawOrigin.Answer
    /// Where the head ends in `raw` (the body follows).
    var headLength: Int

    var summary: String { "\(version) \(status), " + notes.joined(separator: ", ") }

    private static func pick<T>(_ options: [T], _ random: inout SplitMix64) -> T {
        options[Int.random(in: 0..<options.count, using: &random)]
    }

    private static func chance(_ oneIn: Int, _ random: inout SplitMix64) -> Bool {
        Int.random(in: 0..<oneIn, using: &random) == 0
    }

    static func make(content: [UInt8], kept: Int?, random: inout SplitMix64) -> FuzzAnswer {
        let partial = kept != nil && chance(2, &random)
        var status = partial ? 206 : pick([200, 200, 200, 200, 203, 204, 206, 304, 404, 416, 500, 503, 100, 999], &random)
        var head = ""
        var notes: [String] = []
        // An interim 1xx head first, sometimes.
        var interim = chance(8, &random)
        let earlyHints = interim && chance(2, &random)
        if interim { head += earlyHints ? "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" : "HTTP/1.1 100 Continue\r\n\r\n" }
        let version = pick(["HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0"], &random)
        if status == 100 { status = 200; interim = true; head += "HTTP/1.1 100 Continue\r\n\r\n" }
        head += "\(version) \(status) \(chance(10, &random) ? "" : "Reason")\r\n"
        var headers: [String] = []

        // The bytes the body is about: the whole content, or the rest after the kept part.
        let offset = partial ? kept! : 0
        let payload = Array(content[offset...])

        // Content-Length: right, wrong, twice, malformed or huge.
        var length = pick(
            [Length.right, .right, .right, .none, .short, .long, .twiceSame, .twiceDifferent, .huge, .overflow, .signed, .list], &random)
        if length == .short, payload.isEmpty { length = .none }
        var lengthValue = payload.count
        switch length {
        case .right: headers.append("Content-Length: \(payload.count)")
        case .short:
            lengthValue = Int.random(in: 0..<payload.count, using: &random)
            headers.append("Content-Length: \(lengthValue)")
        case .long:
            lengthValue = payload.count + 1 + Int.random(in: 0...100, using: &random)
            headers.append("Content-Length: \(lengthValue)")
        case .twiceSame: headers += ["Content-Length: \(payload.count)", "Content-Length: \(payload.count)"]
        case .twiceDifferent: headers += ["Content-Length: \(payload.count)", "Content-Length: \(payload.count + 1)"]
        case .huge: headers.append("Content-Length: 9223372036854775807")
        case .overflow: headers.append("Content-Length: 99999999999999999999999")
        case .signed: headers.append("Content-Length: +\(payload.count)")
        case .list: headers.append("Content-Length: \(payload.count), \(payload.count)")
        case .none: break
        }
        notes.append("length \(length.rawValue)")

        // Content-Range on 206s (right or wrong), sometimes elsewhere.
        var range: Range?
        if status == 206 || chance(10, &random) {
            let total = content.count
            let choice = pick([Range.right, .right, .right, .start, .end, .total, .star, .huge, .garbage, .twice], &random)
            switch choice {
            case .right: headers.append("Content-Range: bytes \(offset)-\(total - 1)/\(total)")
            case .start: headers.append("Content-Range: bytes \(offset + 1)-\(total - 1)/\(total)")
            case .end: headers.append("Content-Range: bytes \(offset)-\(total + 99)/\(total + 100)")
            case .total: headers.append("Content-Range: bytes \(offset)-\(total - 1)/\(total + 7)")
            case .star: headers.append("Content-Range: bytes \(offset)-\(total - 1)/*")
            case .huge: headers.append("Content-Range: bytes \(offset)-9223372036854775806/9223372036854775807")
            case .garbage: headers.append("Content-Range: bytes=\(offset)-")
            case .twice:
                headers += ["Content-Range: bytes \(offset)-\(total - 1)/\(total)", "Content-Range: bytes 0-\(total - 1)/\(total)"]
            }
            range = choice
            notes.append("range \(choice.rawValue)")
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
        var chunks: Chunks?
        if version == "HTTP/1.1", chance(5, &random) {
            let value = pick(["chunked", "chunked", "gzip, chunked", "identity, chunked"], &random)
            headers.append("Transfer-Encoding: \(value)")
            chunks = pick([Chunks.valid, .valid, .valid, .overflow, .negative, .garbage, .unterminated], &random)
            if value.contains("gzip") { coded = true }
            notes.append("transfer-encoding \(value), chunks \(chunks!.rawValue)")
        }
        // Validators and the rest.
        let validator = pick([Validator.strong, .strong, .weak, .control, .lastModified], &random)
        switch validator {
        case .strong: headers.append("ETag: \"v1\"")
        case .weak: headers.append("ETag: W/\"v1\"")
        case .control: headers.append("ETag: \"a\u{1}b\"")
        case .lastModified: headers.append("Last-Modified: Tue, 01 Jan 2030 00:00:00 GMT")
        }
        if status == 503 || chance(10, &random) {
            // Values that do not parse as delay-seconds are ignored; a date long past is no wait. (A
            // far-future date pauses the whole origin for up to 30 s, by design: not generated.)
            headers.append(
                "Retry-After: "
                    + pick(["0", "nan", "inf", "1e300", "-5", "99999999999999999999", "Sun, 06 Nov 1994 08:49:37 GMT"], &random))
        }
        headers.shuffle(using: &random)
        if length == .twiceDifferent {
            lengthValue = headers.last { $0.hasPrefix("Content-Length: ") }.flatMap { Int($0.dropFirst(16)) } ?? payload.count
        }
        // Obsolete line folding (RFC 9112 5.2): a continuation of a harmless header, or a folded
        // line first, which has nothing to continue (libcurl 7.88 freed a reused handle's last
        // header twice on it: curl issues 11101, 11620).
        var fold: Fold?
        if chance(8, &random) {
            if chance(2, &random) {
                headers.insert(" folded: line", at: 0)
                fold = .first
                notes.append("folded first line")
            } else {
                headers.insert("X-Note: a\r\n\tcontinued", at: Int.random(in: 0...headers.count, using: &random))
                fold = .continuation
                notes.append("folded continuation")
            }
        }

        // The body as framed on the wire.
        let body: [UInt8]
        switch chunks {
        case .overflow?: body = Array("ffffffffffffffffffff\r\n".utf8) + payload + Array("\r\n0\r\n\r\n".utf8)
        case .negative?: body = Array("-1\r\n".utf8) + payload + Array("\r\n0\r\n\r\n".utf8)
        case .garbage?: body = Array("zz\r\n".utf8) + payload
        case .unterminated?: body = Array(String(payload.count, radix: 16).utf8) + [13, 10] + payload + [13, 10]
        case .valid?: body = Array(String(payload.count, radix: 16).utf8) + [13, 10] + payload + Array("\r\n0\r\n\r\n".utf8)
        case nil: body = payload
        }
        // How much is sent, and whether the connection stays open for the next request: only when
        // the answer's framing says exactly where it ends, and the client reads the body whatever
        // the status (it does not for a 204 or 304).
        let cutSoon = chance(8, &random)
        let stallSoon = !cutSoon && chance(40, &random)
        let framedExactly =
            version == "HTTP/1.1" && !coded && ![204, 304].contains(status) && fold == nil
            && (chunks == nil ? length == .right : chunks == .valid && length == .none)
        let keepAlive = framedExactly && !cutSoon && !stallSoon && chance(2, &random)
        if keepAlive { notes.append("kept alive") } else { headers.append("Connection: close") }
        let headBytes = Array((head + headers.joined(separator: "\r\n") + "\r\n\r\n").utf8)
        let whole = headBytes + body
        var cut: Int?
        var stall: Int?
        if cutSoon {
            cut = Int.random(in: 0..<max(whole.count, 1), using: &random); notes.append("closed after \(cut!) of \(whole.count) bytes")
        }
        if stallSoon {
            stall = Int.random(in: 0..<max(whole.count, 1), using: &random); notes.append("stalls after \(stall!) of \(whole.count) bytes")
        }
        let raw = RawOrigin.Answer(Array(whole.prefix(cut ?? whole.count)), stallAfter: stall, keepAlive: keepAlive)
        return FuzzAnswer(
            interim: interim, earlyHints: earlyHints, version: version, status: status, offset: offset, payload: payload, length: length,
            lengthValue: lengthValue, range: range, coded: coded, chunks: chunks, fold: fold, validator: validator,
            cut: cut, stall: stall, keepAlive: keepAlive, notes: notes, raw: raw, headLength: headBytes.count)
    }
}
