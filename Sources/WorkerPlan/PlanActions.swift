/// A plan's action for each entry in one byte; the object and size of a reuse (a few entries)
/// kept aside by position. (As `[PlannedEntry.Action]` each took 32 bytes: a reuse's string
/// sized every slot.)
struct PlanActions: Sendable {
    private var codes: [UInt8] = []
    private var reuses: [Int32: Reuse] = [:]

    private struct Reuse: Sendable {
        var object: String
        var size: Int64
    }

    var count: Int { codes.count }

    mutating func reserve(_ count: Int) {
        codes.reserveCapacity(count)
    }

    mutating func append(_ action: PlannedEntry.Action) {
        switch action {
        case .keep: codes.append(0)
        case .download: codes.append(1)
        case .reuse(let object, let size):
            reuses[Int32(codes.count)] = Reuse(object: object, size: size)
            codes.append(2)
        case .revalidate: codes.append(3)
        case .refresh: codes.append(4)
        case .repair: codes.append(5)
        }
    }

    subscript(position: Int) -> PlannedEntry.Action {
        switch codes[position] {
        case 0: return .keep
        case 1: return .download
        case 2:
            guard let reuse = reuses[Int32(position)] else { preconditionFailure("a reuse keeps its object and size") }
            return .reuse(object: reuse.object, size: reuse.size)
        case 3: return .revalidate
        case 4: return .refresh
        default: return .repair
        }
    }
}
