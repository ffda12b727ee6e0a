import Foundation

/// A fresh temporary directory, removed when the value is released.
public final class TemporaryDirectory: @unchecked Sendable {
    // Immutable after init; @unchecked only because Foundation's file APIs are used from tests.
    public let path: String

    public init() {
        let base = FileManager.default.temporaryDirectory.path + "/worker-tests-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        path = URL(fileURLWithPath: base).resolvingSymlinksInPath().path
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Writes `text` to `name` inside the directory (creating folders) and returns its path.
    @discardableResult
    public func write(_ name: String, _ text: String) -> String {
        write(name, Array(text.utf8))
    }

    @discardableResult
    public func write(_ name: String, _ bytes: [UInt8]) -> String {
        let file = path + "/" + name
        try! FileManager.default.createDirectory(
            atPath: (file as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true)
        try! Data(bytes).write(to: URL(fileURLWithPath: file))
        return file
    }

    /// Files below `relative`, as paths relative to it, sorted.
    public func files(under relative: String) -> [String] {
        let root = path + "/" + relative
        guard let enumerator = FileManager.default.enumerator(atPath: root) else { return [] }
        var found: [String] = []
        while let item = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root + "/" + item, isDirectory: &isDirectory), !isDirectory.boolValue {
                found.append(item)
            }
        }
        return found.sorted()
    }
}
