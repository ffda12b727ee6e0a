import CCurl
import WorkerFetch
import WorkerSupport

/// A transfer's life on the engine's thread: a new handle of its own, the entry and read timeouts
/// and `--limit-rate`'s pauses on the engine's timers, and its end.
///
/// Every transfer gets a new easy handle and it is cleaned up when the transfer ends: a reused
/// handle carries state from one response into the next, and libcurl 7.88 (Debian 12) frees a
/// stale header pointer twice when a response on a reused handle begins with a folded header line
/// (curl issues 11101, 11620) — a crash any server could cause. Connections and the DNS cache stay
/// pooled in the multi handle and TLS sessions in the engine's share, so a new handle costs only
/// its options
/// (BENCHMARKS.md, "A new handle per transfer").
extension CurlEngine {
    /// A timer of the engine's own (timeouts, pauses), added directly: this is its thread.
    func addTimer(at due: Double, _ work: @escaping @Sendable (Bool) -> Void) -> Int {
        let id = newTimerID()
        timers.add(id: id, due: due, work)
        return id
    }

    func begin(_ transfer: CurlTransfer) {
        if let failure = transfer.abortedBeforeStart ?? (stopped != nil ? FetchFailure(.cancelled, "the run was cancelled") : nil) {
            transfer.complete(with: failure)
            return
        }
        let handle: UnsafeMutableRawPointer
        switch options.makeHandle(share: share) {
        case .success(let made): handle = made
        case .failure(let failure):
            transfer.complete(with: failure)
            return
        }
        if let failure = transfer.attach(to: handle) {
            transfer.detach()
            worker_curl_easy_cleanup(handle)
            transfer.complete(with: failure)
            return
        }
        transfers[ObjectIdentifier(transfer)] = transfer
        worker_curl_multi_add_handle(multi, handle)
        transfer.deadlineTimer = addTimer(at: transfer.deadline) { [unowned self] fired in
            guard fired else { return }
            end(transfer, code: nil, failure: FetchFailure(.timeout, "the entry took longer than --entry-timeout"))
        }
        let now = Monotonic.now()
        let watch = SilenceWatch(limit: transfer.timeouts?.read ?? options.readTimeout, now: now, activity: transfer.activity)
        armSilenceTimer(transfer, at: now + watch.interval, watch: watch)
    }

    /// `--read-timeout`: once connected, a transfer that receives nothing for that long (and is
    /// not paused by `--limit-rate`) ends as a timeout (`SilenceWatch` decides, on a timer).
    private func armSilenceTimer(_ transfer: CurlTransfer, at due: Double, watch: SilenceWatch) {
        transfer.silenceTimer = addTimer(at: due) { [unowned self] fired in
            guard fired, transfer.isAttached else { return }
            var watch = watch
            switch watch.check(now: Monotonic.now(), activity: transfer.activity, waiting: !transfer.connected || transfer.paused) {
            case .silent:
                let limit = transfer.timeouts.map { "\(Units.formatDuration($0.read))" } ?? "--read-timeout"
                end(transfer, code: nil, failure: FetchFailure(.timeout, "read timeout: the server sent nothing for \(limit)"))
            case .checkAt(let next):
                armSilenceTimer(transfer, at: next, watch: watch)
            }
        }
    }

    /// `--limit-rate`: resumes a paused transfer when its bytes are paid for.
    func resume(_ transfer: CurlTransfer, at due: Double) {
        transfer.pauseTimer = addTimer(at: due) { fired in
            guard fired, let handle = transfer.handle else { return }
            transfer.paused = false
            transfer.activity &+= 1
            worker_curl_easy_pause(handle, CURLPAUSE_CONT)
        }
    }

    /// Ends a transfer: libcurl finished it (`code`), or it is cut short (`failure`).
    func end(_ transfer: CurlTransfer, code: CURLcode?, failure: FetchFailure?) {
        guard let handle = transfer.handle else { return }
        worker_curl_multi_remove_handle(multi, handle)
        transfers.removeValue(forKey: ObjectIdentifier(transfer))
        if let id = transfer.deadlineTimer { _ = timers.remove(id: id) }
        if let id = transfer.silenceTimer { _ = timers.remove(id: id) }
        if let id = transfer.pauseTimer { _ = timers.remove(id: id) }
        let outcome = transfer.finish(code: code, cutShort: failure)
        transfer.detach()
        worker_curl_easy_cleanup(handle)
        transfer.done(outcome)
    }
}
