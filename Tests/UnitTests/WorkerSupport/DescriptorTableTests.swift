import Foundation
import Testing
import WorkerTestSupport

@testable import WorkerSupport

@Suite(.hangLimit) struct DescriptorTableTests {
    /// Slots in this process's descriptor table (FDSize in /proc/self/status).
    static func tableSize() throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("FDSize:") })
        return try #require(Int(line.dropFirst("FDSize:".count).trimmingCharacters(in: .whitespaces)))
    }

    /// Whether `descriptor` is open. (Tests of other suites open files meanwhile, but none this
    /// high while the low ones are free.)
    static func isOpen(_ descriptor: Int) -> Bool {
        fcntl(Int32(descriptor), F_GETFD) != -1
    }

    static func softLimit() -> Int {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return limit.rlim_cur > UInt(Int32.max) ? Int(Int32.max) : Int(limit.rlim_cur)
    }

    /// One test, in this order: growing to the limit first would leave no room to grow.
    @Test func growsTheTableWithinTheSoftLimitWithoutKeepingADescriptor() throws {
        let limit = Self.softLimit()
        try #require(limit < Int(Int32.max) / 2, "no finite descriptor limit to stay within")
        let before = try Self.tableSize()
        // Twice what the table holds now, within the limit (the table may already be large:
        // other tests run in this process).
        let wanted = min(before * 2, limit)
        try #require(wanted > before, "the descriptor limit leaves no room to grow the table")
        DescriptorTable.reserve(Int32(wanted))
        #expect(try Self.tableSize() >= wanted)
        #expect(!Self.isOpen(wanted - 1))

        // More than the limit allows: grown to the limit, not failed, nothing left open.
        DescriptorTable.reserve(Int32(limit * 2))
        #expect(try Self.tableSize() >= limit)
        #expect(!Self.isOpen(limit - 1))
    }
}
