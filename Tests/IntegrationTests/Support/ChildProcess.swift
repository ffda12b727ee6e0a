import Foundation
import Synchronization

/// A program the tests start (the built `worker`, nginx, openssl, a shell): `posix_spawn` with
/// every descriptor of the suite closed in the child, its end reaped on a thread of its own.
///
/// Not Foundation's `Process`: on Linux it lists `/proc/self/fd` before each start and copies
/// 256 bytes from each entry's name, past the end of glibc's directory buffer once the suite holds
/// more than about 1,300 descriptors; with its leaked pipes it held 2,000, and CI's run crashed in
/// that copy (SIGSEGV in memcpy). It also kept every process object and both its pipes open to
/// the end of the suite.
final class ChildProcess: Sendable {
    enum TerminationReason: Int, Sendable {
        case exit, uncaughtSignal
    }

    /// Where the child's standard output or error goes.
    enum Output {
        /// /dev/null.
        case discard
        /// A file, made empty first (stdout and stderr may name the same one).
        case file(String)
        /// A descriptor of the caller's (a pipe's write end); the caller closes its own copy.
        case descriptor(Int32)
    }

    let processIdentifier: pid_t
    private let status = Mutex<Int32?>(nil)
    private let waiters = Mutex<[CheckedContinuation<Void, Never>]>([])
    private let endedSignal = DispatchSemaphore(value: 0)

    /// Starts `executable` with `arguments` (without the program's name) and `environment`
    /// (the suite's own unless given), in `directory` (the suite's unless given), its standard
    /// input /dev/null.
    init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
        stdout: Output = .discard, stderr: Output = .discard
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var opened: [Int32] = []
        defer { opened.forEach { close($0) } }
        func descriptor(_ output: Output) throws -> Int32 {
            switch output {
            case .discard:
                return try Self.open("/dev/null", O_WRONLY, into: &opened)
            case .file(let path):
                return try Self.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, into: &opened)
            case .descriptor(let fd):
                return fd
            }
        }
        let input = try Self.open("/dev/null", O_RDONLY, into: &opened)
        let output = try descriptor(stdout)
        let error: Int32
        if case .file(let a) = stdout, case .file(let b) = stderr, a == b { error = output } else { error = try descriptor(stderr) }
        posix_spawn_file_actions_adddup2(&actions, input, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, error, 2)
        try Self.spawnExtensions.closeFrom(&actions, 3)
        if let directory { try Self.spawnExtensions.changeDirectory(&actions, directory) }

        // Signals as a shell would leave them: none blocked, none ignored (the suite ignores
        // SIGPIPE, and exec keeps an ignored signal ignored); its own process group.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        sigdelset(&all, SIGKILL)
        sigdelset(&all, SIGSTOP)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { variables.forEach { free($0) } }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, executable, &actions, &attributes, argv, variables)
        guard code == 0 else { throw SpawnFailure(executable: executable, reason: String(cString: strerror(code))) }
        processIdentifier = pid
        let thread = Thread { [self] in reap() }
        thread.name = "child-\(pid)"
        thread.start()
    }

    private func reap() {
        var raw: Int32 = 0
        while waitpid(processIdentifier, &raw, 0) == -1 && errno == EINTR {}
        status.withLock { $0 = raw }
        endedSignal.signal()
        for waiter in waiters.withLock({ waiters in
            defer { waiters = [] }; return waiters
        }) { waiter.resume() }
    }

    var isRunning: Bool { status.withLock { $0 } == nil }

    /// The exit code, or the signal that ended it. Only once it ended.
    var terminationStatus: Int32 {
        let raw = status.withLock { $0 }!
        return raw & 0x7f == 0 ? (raw >> 8) & 0xff : raw & 0x7f
    }

    var terminationReason: TerminationReason {
        status.withLock { $0 }! & 0x7f == 0 ? .exit : .uncaughtSignal
    }

    /// Blocks the calling thread until the child ended (never from a task: use `exited`).
    func waitUntilExit() {
        guard isRunning else { return }
        endedSignal.wait()
        endedSignal.signal()
    }

    /// Waits, suspended, until the child ended.
    func exited() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = waiters.withLock { waiters -> Bool in
                // Checked under the waiters' lock: `reap` sets the status before it takes them.
                if !isRunning { return true }
                waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Waits, suspended, until the child ended, killing it (SIGKILL) once `seconds` passed;
    /// whether it was killed. The limit is kept by a thread of its own, not a task: the suite's
    /// tasks share two threads here, and a task's timer fired 55 s late beside a busy suite (the
    /// child outlived its limit).
    func exited(killingAfter seconds: Double) async -> Bool {
        let killed = Mutex(false)
        if seconds.isFinite {
            let deadline = DispatchTime.now() + max(0, seconds)
            Thread { [self] in
                if endedSignal.wait(timeout: deadline) == .success {
                    endedSignal.signal()  // passed on to the next waiter, as `waitUntilExit` does
                } else if isRunning {
                    killed.withLock { $0 = true }
                    kill(processIdentifier, SIGKILL)
                }
            }.start()
        }
        await exited()
        return killed.withLock { $0 }
    }

    func terminate() { kill(processIdentifier, SIGTERM) }

    struct SpawnFailure: Error, CustomStringConvertible {
        let executable: String
        let reason: String
        var description: String { "could not start \(executable): \(reason)" }
    }

    private static func open(_ path: String, _ flags: Int32, into opened: inout [Int32]) throws -> Int32 {
        let fd = Glibc.open(path, flags | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SpawnFailure(executable: path, reason: String(cString: strerror(errno))) }
        opened.append(fd)
        return fd
    }

    /// glibc's file actions Swift's Glibc module leaves out (declared for _GNU_SOURCE only):
    /// `addclosefrom_np` (2.34) and `addchdir_np` (2.29), found at run time.
    private static let spawnExtensions = SpawnExtensions()

    /// Two addresses in libc, read only.
    private struct SpawnExtensions: @unchecked Sendable {
        private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        private typealias ChangeDirectory =
            @convention(c) (
                UnsafeMutablePointer<posix_spawn_file_actions_t>,
                UnsafePointer<CChar>
            ) -> Int32
        private let closeFromSymbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        private let changeDirectorySymbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np")

        func closeFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ first: Int32) throws {
            guard let closeFromSymbol else {
                throw SpawnFailure(executable: "a child", reason: "glibc has no posix_spawn_file_actions_addclosefrom_np (2.34)")
            }
            let code = unsafeBitCast(closeFromSymbol, to: CloseFrom.self)(actions, first)
            guard code == 0 else { throw SpawnFailure(executable: "a child", reason: String(cString: strerror(code))) }
        }

        func changeDirectory(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ path: String) throws {
            guard let changeDirectorySymbol else {
                throw SpawnFailure(executable: "a child", reason: "glibc has no posix_spawn_file_actions_addchdir_np (2.29)")
            }
            let code = unsafeBitCast(changeDirectorySymbol, to: ChangeDirectory.self)(actions, path)
            guard code == 0 else { throw SpawnFailure(executable: "a child", reason: String(cString: strerror(code))) }
        }
    }
}

/// Everything a pipe carries, read to its end on a thread of its own; the child writes to
/// `writeEnd`, which the caller closes once the child started (or failed to).
final class PipeReader: Sendable {
    private struct State {
        var bytes: [UInt8] = []
        var ended = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    let writeEnd: Int32
    private let state = Mutex(State())

    init() throws {
        var ends: [Int32] = [0, 0]
        // No O_CLOEXEC needed: every child closes what it does not take (`ChildProcess`).
        guard pipe(&ends) == 0 else {
            throw ChildProcess.SpawnFailure(executable: "a pipe", reason: String(cString: strerror(errno)))
        }
        writeEnd = ends[1]
        let readEnd = ends[0]
        Thread { [self] in
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                if count > 0 {
                    state.withLock { $0.bytes.append(contentsOf: chunk[0..<count]) }
                } else if count == 0 || errno != EINTR {
                    break
                }
            }
            close(readEnd)
            let waiter = state.withLock { state in
                state.ended = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }.start()
    }

    /// Closes the caller's copy of the write end.
    func closeWriteEnd() { close(writeEnd) }

    /// What the pipe carried, once every writer closed it.
    func text() async -> String {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.ended { return true }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
        return String(decoding: state.withLock { $0.bytes }, as: UTF8.self)
    }
}
