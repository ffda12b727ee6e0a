// curlprobe MANIFEST CACHE_DIR [--jobs N] [--streams N] [--window N] [--ca-cert FILE]
//
// Downloads every `url:`/`hash: sha256:` pair of a worker manifest (absolute URLs, or relative
// ones with `base_url:`) with libcurl's multi interface on one thread, doing the per-file work
// worker's fetch and store stages do: the body is hashed (SHA-256) while it is written to a
// temporary file, checked against the manifest's hash, and renamed to objects/XX/HASH. No index,
// no report, no retries: this measures the HTTP engine with the store's file work, nothing else.
import CCurlProbe
import Glibc

struct Entry {
    let url: String
    let sha256: String
}

func readManifest(_ path: String) -> [Entry] {
    guard let file = fopen(path, "r") else { fatalError("cannot open \(path)") }
    defer { fclose(file) }
    var entries: [Entry] = []
    var base = ""
    var url: String?
    var line: UnsafeMutablePointer<CChar>?
    var capacity = 0
    while getline(&line, &capacity, file) > 0 {
        let text = String(cString: line!).trimmingCharacters(in: " \n-")
        if text.hasPrefix("base_url: ") {
            base = String(text.dropFirst(10))
        } else if text.hasPrefix("url: ") {
            let value = String(text.dropFirst(5))
            url = value.hasPrefix("http") ? value : base + value
        } else if text.hasPrefix("hash: sha256:"), let current = url {
            entries.append(Entry(url: current, sha256: String(text.dropFirst(13))))
            url = nil
        }
    }
    free(line)
    return entries
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        let drop = Set(set.utf8)
        var bytes = Array(utf8)[...]
        while let first = bytes.first, drop.contains(first) { bytes = bytes.dropFirst() }
        while let last = bytes.last, drop.contains(last) { bytes = bytes.dropLast() }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// One transfer: its temporary file, opened at the first byte, and the running hash.
final class Transfer {
    let entry: Entry
    let temporaryPath: String
    var fd: Int32 = -1
    var hash = SHA256_CTX()
    var failed = false

    init(entry: Entry, temporaryPath: String) {
        self.entry = entry
        self.temporaryPath = temporaryPath
        SHA256_Init(&hash)
    }
}

let onBody: probe_write_callback = { data, size, count, context in
    let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
    let length = size * count
    if transfer.fd < 0 {
        transfer.fd = open(transfer.temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o444)
        if transfer.fd < 0 { transfer.failed = true; return 0 }
    }
    SHA256_Update(&transfer.hash, data, length)
    var offset = 0
    while offset < length {
        let written = write(transfer.fd, data! + offset, length - offset)
        if written < 0 { transfer.failed = true; return 0 }
        offset += written
    }
    return length
}

func hex(_ digest: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8](repeating: 0, count: digest.count * 2)
    for (index, byte) in digest.enumerated() {
        out[2 * index] = digits[Int(byte >> 4)]
        out[2 * index + 1] = digits[Int(byte & 15)]
    }
    return String(decoding: out, as: UTF8.self)
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    fputs("usage: curlprobe MANIFEST CACHE_DIR [--jobs N] [--streams N] [--window N] [--ca-cert FILE]\n", stderr)
    exit(2)
}
var jobs = 16
var streams = 100
var caCert: String?
/// Transfers in flight at once (worker: --jobs on HTTP/1.1, --max-streams on HTTP/2).
var window = 16
var index = 3
while index + 1 < arguments.count {
    switch arguments[index] {
    case "--jobs": jobs = Int(arguments[index + 1])!
    case "--streams": streams = Int(arguments[index + 1])!
    case "--window": window = Int(arguments[index + 1])!
    case "--ca-cert": caCert = arguments[index + 1]
    default: fatalError("unknown option \(arguments[index])")
    }
    index += 2
}
let entries = readManifest(arguments[1])
let cache = arguments[2]
mkdir(cache, 0o755)
mkdir(cache + "/tmp", 0o755)
mkdir(cache + "/objects", 0o755)

curl_global_init(Int(CURL_GLOBAL_DEFAULT))
let multi = curl_multi_init()
probe_multi_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
probe_multi_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, jobs)
probe_multi_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, streams)

var next = 0
var running: Int32 = 0
var inFlight = 0
var delivered = 0
var failures = 0
var madeFolders = Set<String>()

func start(_ entry: Entry, number: Int) {
    let easy = curl_easy_init()
    let transfer = Transfer(entry: entry, temporaryPath: "\(cache)/tmp/dl-\(number)")
    let context = Unmanaged.passRetained(transfer).toOpaque()
    probe_easy_string(easy, CURLOPT_URL, entry.url)
    probe_easy_write(easy, onBody)
    probe_easy_pointer(easy, CURLOPT_WRITEDATA, context)
    probe_easy_pointer(easy, CURLOPT_PRIVATE, context)
    probe_easy_string(easy, CURLOPT_USERAGENT, "worker/1")
    probe_easy_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
    probe_easy_long(easy, CURLOPT_PIPEWAIT, 1)
    probe_easy_long(easy, CURLOPT_CONNECTTIMEOUT_MS, 10_000)
    probe_easy_long(easy, CURLOPT_NOSIGNAL, 1)
    if let caCert { probe_easy_string(easy, CURLOPT_CAINFO, caCert) }
    curl_multi_add_handle(multi, easy)
    inFlight += 1
}

func finish(_ easy: UnsafeMutableRawPointer?, _ code: CURLcode) {
    let context = probe_private(easy)!
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeRetainedValue()
    inFlight -= 1
    defer {
        curl_multi_remove_handle(multi, easy)
        curl_easy_cleanup(easy)
    }
    if transfer.fd >= 0 { close(transfer.fd) }
    var digest = [UInt8](repeating: 0, count: 32)
    SHA256_Final(&digest, &transfer.hash)
    let actual = hex(digest)
    guard code == CURLE_OK, probe_response_code(easy) == 200, !transfer.failed, actual == transfer.entry.sha256 else {
        unlink(transfer.temporaryPath)
        failures += 1
        return
    }
    let folder = "\(cache)/objects/\(actual.prefix(2))"
    if madeFolders.insert(folder).inserted { mkdir(folder, 0o755) }
    if rename(transfer.temporaryPath, "\(folder)/\(actual)") != 0 { failures += 1; return }
    delivered += 1
}

repeat {
    while inFlight < window, next < entries.count {
        start(entries[next], number: next)
        next += 1
    }
    curl_multi_perform(multi, &running)
    var left: Int32 = 0
    var finished = 0
    while let message = curl_multi_info_read(multi, &left) {
        if message.pointee.msg == CURLMSG_DONE {
            finish(message.pointee.easy_handle, message.pointee.data.result)
            finished += 1
        }
    }
    // Wait for the sockets only when nothing finished: a freed slot starts its next transfer now.
    if finished == 0, inFlight > 0 {
        curl_multi_poll(multi, nil, 0, 1000, nil)
    }
} while inFlight > 0 || next < entries.count

curl_multi_cleanup(multi)
print("\(delivered) delivered, \(failures) failed")
exit(failures == 0 ? 0 : 1)
