/// What the client must do with a fuzz case: the entry stored with exactly these bytes, or failed.
/// A plain model of the contract and of the client's documented decisions, attempt by attempt:
/// which answers carry the content (a 200/203 whose framing is whole, or the rest of a kept part as
/// a 206 that starts where it ends), which failures are tried again (connection, cut, timeout, 5xx,
/// 408, 429, a resume that went wrong) and which end the entry (other statuses, a hash mismatch,
/// an encoding nobody asked for), and when a cut body is kept to be resumed (1 MiB or more with a
/// strong validator). Where HTTP leaves the reading of a malformed head to the client library, the
/// model follows libcurl's (its last Content-Length wins, `+N` is N, an overflowing one is ignored, a
/// folded first line is refused unless a 103's header came before it): `ResponseFuzzTests` runs on
/// Debian 12's libcurl 7.88.
struct FuzzModel {
    enum Outcome: Equatable, CustomStringConvertible {
        case stored([UInt8])
        case failed

        var description: String {
            switch self {
            case .stored(let bytes): "stored \(bytes.count) bytes"
            case .failed: "failed"
            }
        }
    }

    /// Extra attempts after the first (`--retries`).
    let retries: Int
    /// The size from which a cut body is kept to be resumed (`FetchSettings.resumeThreshold`).
    let resumeThreshold = 1 << 20

    private struct Kept {
        var size: Int
        var validator: String
    }

    private enum Step {
        case stored([UInt8])
        case failed(transient: Bool, String)
    }

    /// The outcome, and one line per attempt saying what the model made of it.
    func outcome(of item: FuzzCase) -> (Outcome, trace: [String]) {
        var kept = item.kept.map { Kept(size: $0, validator: "\"v1\"") }
        var trace: [String] = []
        for attempt in 0...retries {
            let answer = item.answers[min(attempt, item.answers.count - 1)]
            switch step(answer, item: item, kept: &kept) {
            case .stored(let bytes):
                trace.append("attempt \(attempt + 1): stored \(bytes.count) bytes")
                return (.stored(bytes), trace)
            case .failed(let transient, let why):
                trace.append("attempt \(attempt + 1): \(why) (\(transient ? "tried again" : "final"))")
                if !transient { return (.failed, trace) }
            }
        }
        return (.failed, trace)
    }

    /// One attempt: the request carries `kept` (Range + If-Range) when there is one.
    private func step(_ answer: FuzzAnswer, item: FuzzCase, kept: inout Kept?) -> Step {
        let sent = answer.cut ?? answer.stall ?? answer.raw.bytes.count
        if sent < answer.headLength {
            return .failed(transient: true, answer.cut != nil ? "closed within the head" : "stalled within the head")
        }
        // A folded first line has nothing to continue, unless an interim head's header came
        // before it (libcurl then continues that one).
        if answer.fold == .first, !answer.earlyHints { return .failed(transient: true, "a folded first header line") }
        let resume = kept
        let status = answer.status
        let success = status == 200 || status == 203
        if status == 416, resume != nil {
            kept = nil
            return .failed(transient: true, "416 to a resumed request: start over")
        }
        if (200..<300).contains(status), answer.coded {
            kept = nil
            return .failed(transient: false, "an encoding nobody asked for")
        }
        if status == 206, let resume {
            return resumed(answer, item: item, from: resume, kept: &kept)
        }
        kept = nil
        if status == 204 || status == 304 {
            // No body follows these, whatever the head says.
            return .failed(transient: false, "HTTP \(status)")
        }
        if success {
            switch answer.length {
            case .twiceDifferent, .huge, .overflow, .signed:
                return .failed(transient: true, "a Content-Length that is no byte count")
            default: break
            }
        }
        let declared: Int? = success ? ourLength(answer) : nil
        let validator: String? =
            switch answer.validator {
            case .strong: "\"v1\""
            case .lastModified: "Tue, 01 Jan 2030 00:00:00 GMT"
            case .weak, .control: nil
            }
        return body(
            answer, item: item, prefix: [], declared: declared, keepsBody: success, validator: validator,
            resumed: false, kept: &kept)
    }

    /// A 206 to a request that carried a kept part of `resume.size` bytes.
    private func resumed(_ answer: FuzzAnswer, item: FuzzCase, from resume: Kept, kept: inout Kept?) -> Step {
        let total = item.content.count
        // The Content-Range as generated, as the client reads it.
        var range: (first: Int, last: Int, total: Int)?
        switch answer.range {
        case .right?: range = (answer.offset, total - 1, total)
        case .end?: range = (answer.offset, total + 99, total + 100)
        default: range = nil  // a wrong start or total, `*`, over 18 digits, garbage, or two
        }
        if answer.range == .start || answer.range == .total { range = nil }
        guard let range, range.first == resume.size else {
            kept = nil
            return .failed(transient: true, "a resumed answer with another range: start over")
        }
        let length = range.last - range.first + 1
        switch answer.length {
        case .twiceDifferent, .huge, .overflow, .signed:
            kept = nil
            return .failed(transient: true, "a resumed answer whose Content-Length is no byte count: start over")
        case .right, .short, .long, .twiceSame, .list:
            if ourLength(answer) != length {
                kept = nil
                return .failed(transient: true, "a resumed answer whose length disagrees with its range: start over")
            }
        case .none: break
        }
        return body(
            answer, item: item, prefix: Array(item.content.prefix(resume.size)), declared: range.total, keepsBody: true,
            validator: resume.validator, resumed: true, kept: &kept)
    }

    /// The body as libcurl frames it, then what the client makes of it: `prefix` is the kept part it
    /// continues, `declared` the whole size the head promised (checked at the end).
    private func body(
        _ answer: FuzzAnswer, item: FuzzCase, prefix: [UInt8], declared: Int?, keepsBody: Bool,
        validator: String?, resumed: Bool, kept: inout Kept?
    ) -> Step {
        let sent = answer.cut ?? answer.stall ?? answer.raw.bytes.count
        let wire = sent - answer.headLength
        let whole = answer.cut == nil && answer.stall == nil
        // How many payload bytes arrived, and whether libcurl ended the body as framed.
        var received: Int
        var framed: Bool
        var why = ""
        if let chunks = answer.chunks {
            switch chunks {
            case .overflow, .negative, .garbage:
                (received, framed, why) = (0, false, "a chunk size that is no number")
            case .valid, .unterminated:
                let line = String(answer.payload.count, radix: 16).utf8.count + 2
                received = min(max(0, wire - line), answer.payload.count)
                framed = chunks == .valid && whole
                why = chunks == .valid ? "cut within the chunks" : "no last chunk"
            }
        } else if let length = curlLength(answer) {
            received = min(wire, length)
            framed = received == length
            why = "cut before the declared length"
        } else {
            // Delimited by the close: whatever arrived before it, unless the server stalled.
            received = wire
            framed = answer.stall == nil
            why = "stalled"
        }
        received = min(received, answer.payload.count)
        guard framed else {
            if keepsBody { keepOrDiscard(size: prefix.count + received, validator: validator, resumed: resumed, kept: &kept) }
            return .failed(transient: true, answer.stall != nil ? "read timeout" : why)
        }
        guard keepsBody else {
            let status = answer.status
            return .failed(transient: status >= 500 || status == 408 || status == 429, "HTTP \(status)")
        }
        let bytes = prefix + answer.payload.prefix(received)
        if let declared, bytes.count != declared {
            keepOrDiscard(size: bytes.count, validator: validator, resumed: resumed, kept: &kept)
            return .failed(transient: true, "truncated: \(bytes.count) of \(declared) bytes")
        }
        if item.hashed, bytes != item.content {
            if resumed {
                kept = nil
                return .failed(transient: true, "a resumed body that fails its hash: start over")
            }
            return .failed(transient: false, "hash mismatch")
        }
        return .stored(bytes)
    }

    /// A cut body: kept to be resumed from when it is large enough and has a strong validator.
    private func keepOrDiscard(size: Int, validator: String?, resumed: Bool, kept: inout Kept?) {
        if let validator, size >= resumeThreshold {
            kept = Kept(size: size, validator: validator)
        } else if resumed {
            kept = nil
        }
    }

    /// The length the client reads from the head (a plain decimal of at most 18 digits; a list of
    /// one number twice is that number), for the forms it accepts.
    private func ourLength(_ answer: FuzzAnswer) -> Int? {
        switch answer.length {
        case .right, .short, .long: answer.lengthValue
        case .twiceSame, .list: answer.payload.count
        case .none, .twiceDifferent, .huge, .overflow, .signed: nil
        }
    }

    /// The length libcurl frames the body by: its last Content-Length, `+N` as N, an overflowing
    /// one ignored (then the close ends the body).
    private func curlLength(_ answer: FuzzAnswer) -> Int? {
        switch answer.length {
        case .right, .short, .long: answer.lengthValue
        case .twiceSame, .list, .signed: answer.payload.count
        case .twiceDifferent: answer.lengthValue
        case .huge: Int.max
        case .overflow, .none: nil
        }
    }
}
