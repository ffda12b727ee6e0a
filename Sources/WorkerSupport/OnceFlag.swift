import Synchronization

extension Mutex where Value == Bool {
    /// Sets the flag; true when this call set it (it was false): the one caller that goes on
    /// (a lock released once, a thread started once).
    public func setFirst() -> Bool {
        withLock { flag in
            defer { flag = true }
            return !flag
        }
    }
}
