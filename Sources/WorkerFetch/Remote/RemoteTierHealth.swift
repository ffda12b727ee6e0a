/// Whether a run still asks the shared tier, as a plain value: every lookup's answer (a hit, a
/// miss; not an upload's) clears the count of errors in a row; `limit` errors in a row (refused, down, 5xx, timeouts,
/// corrupt bodies) give the tier up for the rest of the run, once. No retries against a sick
/// tier, and the origin's breaker never hears of it.
struct RemoteTierHealth: Equatable {
    let limit: Int
    private(set) var errorsInRow = 0
    /// Why the tier was given up (the last error), or nil while it is asked.
    private(set) var givenUp: String?

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    var isUsable: Bool { givenUp == nil }

    /// The tier answered as a tier should.
    mutating func answered() {
        if givenUp == nil { errorsInRow = 0 }
    }

    /// Gives the tier up for another reason than errors (it is slower than the origin).
    mutating func giveUp(_ why: String) {
        if givenUp == nil { givenUp = why }
    }

    /// An error; true when this one gives the tier up (only the first time).
    mutating func failed(_ why: String) -> Bool {
        guard givenUp == nil else { return false }
        errorsInRow += 1
        guard errorsInRow >= limit else { return false }
        givenUp = why
        return true
    }
}
