import CCurl
import CWorkerSystem
import FoundationEssentials
import Glibc
import Synchronization
import WorkerFetch
import WorkerStore
import WorkerSupport

/// A fetch engine: libcurl's multi interface on a thread of its own, with its own connections.
/// The transfers it is given, the timers around them (retry waits, `--max-rps` slots, timeouts)
/// and the work they start run on this one thread, one at a time: bodies are hashed and written
/// where they arrive, and a download's retries and redirects stay here. (A run has a few engines,
/// one per core: `Fetcher`.) Other threads reach it through `execute`, `schedule` and `start`,
/// which queue a command and wake it.
final class CurlEngine: FetchEngine {
    // (Transfers begin and end in `CurlEngine+Transfers`.)

    private enum Command {
        case run(@Sendable () -> Void)
        case addTimer(id: Int, due: Double, work: @Sendable (Bool) -> Void)
        case cancelTimer(Int)
        case start(CurlTransfer)
        case abort(CurlTransfer, FetchFailure)
        case stop(@Sendable () -> Void)
    }

    private struct Inbox {
        var commands: [Command] = []
        /// The engine ended: commands are dropped.
        var closed = false
        /// The last timer id handed out (`newTimerID`).
        var lastTimerID = 0
        /// The multi handle's address, for waking the engine: `curl_multi_wakeup` is the one
        /// libcurl call made from other threads (made safe for that by libcurl), and only while
        /// the inbox is open (the handle is cleaned up after it closes).
        let wakeAddress: UInt
    }

    /// What only the engine's thread touches: libcurl's handles, the transfers and the timers.
    final class Loop {
        let multi: UnsafeMutableRawPointer
        /// TLS sessions shared by the engine's handles.
        let share: UnsafeMutableRawPointer
        var timers = TimerQueue<@Sendable (Bool) -> Void>()
        var transfers: [ObjectIdentifier: CurlTransfer] = [:]
        var handles: HandlePool
        var stopped: (@Sendable () -> Void)?
        /// Timers cancelled before they were added (ids handed out first, for registering).
        var cancelledEarly = Set<Int>()

        /// libcurl's handles are cleaned up (`close`).
        private var closed = false

        init(multi: UnsafeMutableRawPointer, share: UnsafeMutableRawPointer, handles: HandlePool) {
            self.multi = multi
            self.share = share
            self.handles = handles
        }

        /// Cleans up libcurl's handles, once: as the engine stops, or when its thread never started.
        func close() {
            guard !closed else { return }
            closed = true
            handles.drain()
            worker_curl_multi_cleanup(multi)
            worker_curl_share_cleanup(share)
        }

        deinit {
            close()
        }
    }

    private let inbox: Mutex<Inbox>
    let thread = EngineThread()
    let options: CurlOptions
    let loop: EngineBound<Loop>

    /// Starts the engine's thread; fails (never traps) when libcurl cannot be loaded or make a
    /// multi handle, or the system will not start a thread.
    init(options: CurlOptions) throws(EngineStartFailure) {
        if let problem = Libcurl.loadProblem() { throw .library(name: "libcurl.so.4", reason: problem) }
        self.options = options
        let handles = HandlePool(
            enabled: options.reusesHandles
                ?? HandlePool.reusesHandles(libcurlVersion: UInt32(worker_curl_version_number())))
        let multi = try options.makeMulti()
        let share: UnsafeMutableRawPointer
        do {
            share = try CurlOptions.makeShare()
        } catch {
            worker_curl_multi_cleanup(multi)
            throw error
        }
        inbox = Mutex(Inbox(wakeAddress: UInt(bitPattern: multi)))
        loop = EngineBound(Loop(multi: multi, share: share, handles: handles), on: thread)
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(
            &thread, nil,
            { context in
                let engine = Unmanaged<CurlEngine>.fromOpaque(context!).takeRetainedValue()
                engine.thread.enter()
                worker_name_thread("worker-fetch")
                engine.run()
                return nil
            }, context)
        guard created == 0 else {
            // The engine goes, and its loop with it (libcurl's handles cleaned up).
            Unmanaged<CurlEngine>.fromOpaque(context).release()
            throw .resources("cannot start a thread for downloads: \(String(cString: strerror(created)))")
        }
        pthread_detach(thread)
    }

    /// Whether the caller runs on the engine's thread.
    var isCurrent: Bool {
        thread.isCurrent
    }

    // MARK: - From any thread

    /// Runs `work` on the engine's thread, after what is queued before it.
    func execute(_ work: @escaping @Sendable () -> Void) {
        submit(.run(work))
    }

    /// An id for a timer to `schedule` later (registered for cancelling before it exists).
    func newTimerID() -> Int {
        inbox.withLock { inbox in
            inbox.lastTimerID += 1
            return inbox.lastTimerID
        }
    }

    func schedule(_ id: Int, in seconds: Double, _ work: @escaping @Sendable (Bool) -> Void) {
        submit(.addTimer(id: id, due: Monotonic.now() + max(0, seconds), work: work))
    }

    func cancelTimer(_ id: Int) {
        submit(.cancelTimer(id))
    }

    func transfer(
        _ request: TransferRequest, handler: consuming sending ResponseHandler,
        done: @escaping @Sendable (ExchangeReply) -> Void
    ) -> any EngineTransfer {
        CurlTransfer(request, handler: handler, engine: self, thread: thread, done: done)
    }

    /// Starts `transfer`; its `done` is called on the engine's thread.
    func start(_ transfer: any EngineTransfer) {
        guard let transfer = transfer as? CurlTransfer else { return }
        submit(.start(transfer))
    }

    /// Ends `transfer` with `failure` if it is still running.
    func abort(_ transfer: any EngineTransfer, _ failure: FetchFailure) {
        guard let transfer = transfer as? CurlTransfer else { return }
        submit(.abort(transfer, failure))
    }

    /// Ends the engine once the transfers in flight are aborted; returns when its thread is done.
    func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            submit(.stop({ continuation.resume() }))
        }
    }

    private func submit(_ command: Command) {
        let current = isCurrent
        let accepted = inbox.withLock { inbox in
            guard !inbox.closed else { return false }
            inbox.commands.append(command)
            // The engine drains its inbox before it waits: only a command from another thread
            // into an empty inbox needs to wake it. (Under the lock: the handle outlives it.)
            if inbox.commands.count == 1, !current { worker_curl_multi_wakeup(UnsafeMutableRawPointer(bitPattern: inbox.wakeAddress)) }
            return true
        }
        if !accepted { refuse(command) }
    }

    /// A command that came after the engine ended: whoever waits on it is answered here.
    private func refuse(_ command: Command) {
        switch command {
        case .addTimer(_, _, let work): work(false)
        case .start(let transfer): transfer.complete(with: FetchFailure(.cancelled, "the run was cancelled"))
        case .stop(let done): done()
        case .run, .cancelTimer, .abort: break
        }
    }

    // MARK: - The engine's thread

    private func run() {
        let loop = loop.value
        let multi = loop.multi
        var running: Int32 = 0
        // The inbox's commands are swapped out, not copied: no allocation per turn.
        var commands: [Command] = []
        while true {
            inbox.withLock { swap(&commands, &$0.commands) }
            for command in commands { apply(command) }
            commands.removeAll(keepingCapacity: true)
            for work in loop.timers.takeDue(now: Monotonic.now()) { work(true) }
            worker_curl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let message = worker_curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                    let context = worker_curl_info_private(easy)
                else { continue }
                let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
                end(transfer, code: message.pointee.data.result, failure: nil)
            }
            if let stopped = loop.stopped, loop.transfers.isEmpty {
                finishStop(stopped)
                return
            }
            let queued = inbox.withLock { !$0.commands.isEmpty }
            var wait = loop.transfers.isEmpty ? 1000 : Self.busyWait
            if queued {
                wait = 0
            } else if let due = loop.timers.nextDue() {
                wait = Checked.milliseconds(due - Monotonic.now(), upTo: wait)
            }
            if wait > 0 { worker_curl_multi_poll(multi, Int32(wait)) }
        }
    }

    /// The longest wait for socket activity while transfers are in flight, in milliseconds.
    /// Debian 12's libcurl (7.88) now and then leaves an HTTP/2 stream whose data it has already
    /// read unserviced until the wait ends (docs/ARCHITECTURE.md, "Measurements behind the
    /// code"). Idle, the engine waits up to a second.
    static let busyWait = 10

    private func apply(_ command: Command) {
        let loop = loop.value
        switch command {
        case .run(let work):
            work()
        case .addTimer(let id, let due, let work):
            if loop.cancelledEarly.remove(id) != nil {
                work(false)
            } else {
                loop.timers.add(id: id, due: due, work)
            }
        case .cancelTimer(let id):
            if let work = loop.timers.remove(id: id) {
                work(false)
            } else {
                // Cancelled before its `schedule` arrived (or, rarely, just after it fired).
                loop.cancelledEarly.insert(id)
            }
        case .start(let transfer):
            begin(transfer)
        case .abort(let transfer, let failure):
            if transfer.isAttached {
                end(transfer, code: nil, failure: failure)
            } else {
                transfer.state.value.abortedBeforeStart = failure
            }
        case .stop(let done):
            loop.stopped = done
            for transfer in Array(loop.transfers.values) {
                end(transfer, code: nil, failure: FetchFailure(.cancelled, "the run was cancelled"))
            }
        }
    }

    /// Ends what the stop left: timers end as cancelled, queued work runs (a start ends as
    /// cancelled at once) until nothing more is queued; then the inbox closes.
    private func finishStop(_ done: @Sendable () -> Void) {
        let loop = loop.value
        while true {
            for work in loop.timers.takeDue(now: .infinity) { work(false) }
            let timersLeft = loop.timers.count
            let commands = inbox.withLock { inbox in
                if inbox.commands.isEmpty, timersLeft == 0 { inbox.closed = true }
                defer { inbox.commands.removeAll() }
                return inbox.commands
            }
            if commands.isEmpty, loop.timers.count == 0 { break }
            for command in commands { apply(command) }
        }
        loop.close()
        done()
    }
}
