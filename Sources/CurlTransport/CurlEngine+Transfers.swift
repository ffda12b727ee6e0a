import CCurl
import WorkerFetch
import WorkerSupport

/// A transfer's life on the engine's thread: a handle (`HandlePool` says whether a kept one), the
/// entry and read timeouts on the engine's timers, and its end.
/// Connections and the DNS cache stay pooled in the multi handle and TLS sessions in the engine's
/// share, whatever the handle.
extension CurlEngine {
    /// A timer of the engine's own (timeouts), added to its `loop` directly: this is its thread.
    private func addTimer(at due: Double, to loop: Loop, _ work: @escaping @Sendable (Bool) -> Void) -> Int {
        let id = newTimerID()
        loop.timers.add(id: id, due: due, work)
        return id
    }

    func begin(_ transfer: CurlTransfer) {
        let loop = loop.value
        let state = transfer.state.value
        if let failure = state.abortedBeforeStart
            ?? (loop.stopped != nil ? FetchFailure(.cancelled, "the run was cancelled") : nil)
        {
            transfer.complete(with: failure)
            return
        }
        let handle: UnsafeMutableRawPointer
        if let kept = loop.handles.take(forPlainGet: transfer.isPlainGet) {
            handle = kept
        } else {
            switch options.makeHandle(share: loop.share) {
            case .success(let made): handle = made
            case .failure(let failure):
                transfer.complete(with: failure)
                return
            }
        }
        if let failure = transfer.attach(to: handle) {
            transfer.detach()
            // A request libcurl refused may have left options set: never kept.
            worker_curl_easy_cleanup(handle)
            transfer.complete(with: failure)
            return
        }
        loop.transfers[ObjectIdentifier(transfer)] = transfer
        worker_curl_multi_add_handle(loop.multi, handle)
        state.deadlineTimer = addTimer(at: transfer.deadline, to: loop) { [unowned self] fired in
            guard fired else { return }
            end(transfer, code: nil, failure: FetchFailure(.timeout, "the entry took longer than --entry-timeout"))
        }
        let now = Monotonic.now()
        let watch = SilenceWatch(limit: transfer.timeouts?.read ?? options.readTimeout, now: now, activity: state.activity)
        armSilenceTimer(transfer, state, at: now + watch.interval, watch: watch, in: loop)
    }

    /// `--read-timeout`: once connected, a transfer that receives nothing for that long (and is
    /// not paused by `--limit-rate`) ends as a timeout (`SilenceWatch` decides, on a timer).
    private func armSilenceTimer(
        _ transfer: CurlTransfer, _ state: CurlTransfer.State, at due: Double, watch: SilenceWatch,
        in loop: Loop
    ) {
        state.silenceTimer = addTimer(at: due, to: loop) { [unowned self] fired in
            let state = transfer.state.value
            guard fired, state.handle != nil else { return }
            var watch = watch
            switch watch.check(now: Monotonic.now(), activity: state.activity, waiting: !state.connected || state.paused) {
            case .silent:
                let limit = transfer.timeouts.map { "\(Units.formatDuration($0.read))" } ?? "--read-timeout"
                end(transfer, code: nil, failure: FetchFailure(.timeout, "read timeout: the server sent nothing for \(limit)"))
            case .checkAt(let next):
                armSilenceTimer(transfer, state, at: next, watch: watch, in: self.loop.value)
            }
        }
    }

    /// Ends a transfer: libcurl finished it (`code`), or it is cut short (`failure`).
    func end(_ transfer: CurlTransfer, code: CURLcode?, failure: FetchFailure?) {
        let loop = loop.value
        let state = transfer.state.value
        guard let handle = state.handle else { return }
        worker_curl_multi_remove_handle(loop.multi, handle)
        loop.transfers.removeValue(forKey: ObjectIdentifier(transfer))
        if let id = state.deadlineTimer { _ = loop.timers.remove(id: id) }
        if let id = state.silenceTimer { _ = loop.timers.remove(id: id) }
        if let id = state.pauseTimer { _ = loop.timers.remove(id: id) }
        let outcome = transfer.finish(code: code, cutShort: failure)
        transfer.detach()
        // Kept only after a plain GET that libcurl ended itself: one cut short here (a timeout,
        // a stop) may have been paused or mid-response.
        loop.handles.giveBack(handle, reusable: transfer.isPlainGet && code != nil && !state.paused)
        transfer.done(outcome)
    }
}
