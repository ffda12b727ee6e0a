import CCurl
import Glibc
import WorkerFetch
import WorkerSupport

/// What a request other than a plain GET sets on its handle: a HEAD, a PUT of an open file (the
/// shared tier's uploads), a request's own timeouts, its signing. Such a handle is never reused
/// (`HandlePool`).
extension CurlTransfer {
    /// A GET with the engine's timeouts and no signing: it sets no option of its own beyond its
    /// URL, headers and context, so it may take and leave a kept handle.
    var isPlainGet: Bool {
        guard case .get = method else { return false }
        return timeouts == nil && signing == nil && ssh == nil
    }

    /// A HEAD or a PUT (a new or kept handle is a GET), the request's own timeouts and its AWS signing;
    /// an option libcurl refuses ends the exchange before it starts.
    func setRequestOptions(_ handle: UnsafeMutableRawPointer) -> FetchFailure? {
        var refused: [String] = []
        func check(_ code: CURLcode, _ option: String) { if code != CURLE_OK { refused.append(option) } }
        switch method {
        case .get:
            break
        case .head:
            check(worker_curl_set_long(handle, CURLOPT_NOBODY, 1), "CURLOPT_NOBODY")
        case .put(_, let size):
            check(worker_curl_set_long(handle, CURLOPT_UPLOAD, 1), "CURLOPT_UPLOAD")
            check(worker_curl_set_off_t(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(size)), "CURLOPT_INFILESIZE_LARGE")
        case .makeCollection:
            check(worker_curl_set_string(handle, CURLOPT_CUSTOMREQUEST, "MKCOL"), "CURLOPT_CUSTOMREQUEST")
        }
        if let timeouts {
            check(
                worker_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Checked.milliseconds(timeouts.connect, upTo: Int(Int32.max))),
                "CURLOPT_CONNECTTIMEOUT_MS")
            check(worker_curl_set_long(handle, CURLOPT_LOW_SPEED_LIMIT, max(1, timeouts.slowestRate)), "CURLOPT_LOW_SPEED_LIMIT")
            check(worker_curl_set_long(handle, CURLOPT_LOW_SPEED_TIME, max(1, Int(timeouts.read.rounded(.up)))), "CURLOPT_LOW_SPEED_TIME")
        }
        guard refused.isEmpty else { return FetchFailure(.io, "libcurl refused " + refused.joined(separator: ", ")) }
        if let ssh, let failure = setSFTPOptions(handle, login: ssh) { return failure }
        if let signing {
            // libcurl signs the method, path, query and the request's headers; the secret stays in it.
            guard worker_curl_set_string(handle, CURLOPT_AWS_SIGV4, signing.provider) == CURLE_OK,
                worker_curl_set_string(handle, CURLOPT_USERPWD, signing.userPassword) == CURLE_OK
            else { return FetchFailure(.connection, "this libcurl cannot sign requests (AWS Signature Version 4 needs 7.75 or later)") }
        }
        return nil
    }

    /// The next part of a PUT's file, copied into libcurl's buffer: its length, 0 at the end, or
    /// an abort when the file cannot be read.
    func send(into buffer: UnsafeMutablePointer<CChar>?, capacity: Int) -> Int {
        let state = state.value
        state.activity &+= 1
        guard state.upload >= 0, let buffer else { return Int(CURL_READFUNC_ABORT) }
        while true {
            let count = read(state.upload, buffer, capacity)
            if count >= 0 { return count }
            if errno != EINTR { return Int(CURL_READFUNC_ABORT) }
        }
    }
}
