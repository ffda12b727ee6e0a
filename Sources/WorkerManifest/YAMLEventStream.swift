import CYAML
import FoundationEssentials
import Glibc

/// The events of one manifest, in order. A large file is parsed on a thread of its own, batches
/// of events ahead of the reader (libyaml's scan and the reader's checks then take a core each);
/// a small one is parsed here, a batch at a time, without a thread. Both give the same events.
/// A value type, kept by its reader: events are read from the batch in place.
struct YAMLEventStream {
    /// Files at least this large get a parsing thread. Below it the thread costs more than it
    /// saves in a sync, where it competes with the index read-ahead for two cores
    /// (docs/ARCHITECTURE.md, "Measurements behind the code").
    static let threadedFromBytes = 4 << 20
    /// Events per batch: a hand-over per few thousand events costs nothing next to parsing them.
    static let batchSize = 4096

    /// Where batches come from: the parser itself, or its thread (stopped when this goes).
    private final class Source {
        enum Kind {
            case here(LibYAMLParser)
            case thread(YAMLEventPipe)
        }

        let kind: Kind

        init(_ kind: sending Kind) {
            self.kind = kind
        }

        deinit {
            if case .thread(let pipe) = kind { pipe.stop() }
        }
    }

    private let source: Source
    private var batch = YAMLEventBatch()
    private var position = 0
    /// The stream's end or its error, once read.
    private var last: Result<YAMLEvent, YAMLSyntaxError>?

    /// Opens `path` (throwing a message naming the OS error) and, for a file of
    /// `threadedFromBytes` or more, starts parsing it on another thread.
    init(path: String, threadedFromBytes: Int = YAMLEventStream.threadedFromBytes) throws(ManifestDiagnostic) {
        source = try Self.source(path: path, threadedFromBytes: threadedFromBytes)
    }

    private static func source(path: String, threadedFromBytes: Int) throws(ManifestDiagnostic) -> Source {
        let parser = try LibYAMLParser(path: path)
        guard parser.byteCount >= threadedFromBytes else { return Source(.here(parser)) }
        if let pipe = YAMLEventPipe(parser: parser, batchSize: batchSize) { return Source(.thread(pipe)) }
        // No thread started, and the parser went with it: the file is parsed here.
        return Source(.here(try LibYAMLParser(path: path)))
    }

    /// The next event, or a located syntax error; after the end or an error, that again.
    mutating func next() -> Result<YAMLEvent, YAMLSyntaxError> {
        if let last { return last }
        while position == batch.events.count {
            if let failure = batch.failure {
                last = .failure(failure)
                return .failure(failure)
            }
            switch source.kind {
            case .thread(let pipe):
                var used = YAMLEventBatch()
                swap(&used, &batch)
                batch = pipe.take(returning: used)
            case .here(let parser):
                batch.removeAll()
                parser.fill(&batch, upTo: Self.batchSize)
            }
            position = 0
        }
        let event = batch.event(at: position)
        position += 1
        if event.kind == .streamEnd { last = .success(event) }
        return .success(event)
    }
}
