/// Events parsed and not yet read, packed for the hand-over from the parser: the scalars' texts
/// share one byte buffer, so filling a batch allocates nothing once its buffers have grown.
struct YAMLEventBatch {
    struct Event {
        var kind: YAMLEvent.Kind
        var isPlain: Bool
        var hasAnchor: Bool
        var line: Int
        var column: Int
        /// The scalar's text: `text[textStart ..< textStart + textCount]`.
        var textStart: Int
        var textCount: Int
    }

    private(set) var events: [Event] = []
    private(set) var text: [UInt8] = []
    /// The parse error after the last event: it ends the stream.
    var failure: YAMLSyntaxError?

    /// True once the batch holds the stream's last event or its error: nothing follows it.
    var isLast: Bool {
        failure != nil || events.last?.kind == .streamEnd
    }

    mutating func append(
        _ kind: YAMLEvent.Kind, line: Int, column: Int, text bytes: UnsafeBufferPointer<UInt8>?,
        isPlain: Bool, hasAnchor: Bool
    ) {
        let start = text.count
        if let bytes { text.append(contentsOf: bytes) }
        events.append(
            Event(
                kind: kind, isPlain: isPlain, hasAnchor: hasAnchor, line: line, column: column,
                textStart: start, textCount: text.count - start))
    }

    /// Empties the batch for refilling, keeping its buffers.
    mutating func removeAll() {
        events.removeAll(keepingCapacity: true)
        text.removeAll(keepingCapacity: true)
        failure = nil
    }

    /// The event at `index`, its text as a string.
    func event(at index: Int) -> YAMLEvent {
        let packed = events[index]
        let value =
            packed.textCount == 0
            ? ""
            : text.withUnsafeBufferPointer { buffer in
                String(
                    decoding: UnsafeBufferPointer(rebasing: buffer[packed.textStart..<packed.textStart + packed.textCount]),
                    as: UTF8.self)
            }
        return YAMLEvent(
            kind: packed.kind, line: packed.line, column: packed.column, value: value,
            isPlain: packed.isPlain, hasAnchor: packed.hasAnchor)
    }
}
