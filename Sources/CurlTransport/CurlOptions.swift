import CCurl
import CWorkerSystem
import FoundationEssentials
import Glibc
import WorkerFetch
import WorkerStore
import WorkerSupport

/// What every transfer's handle is set up with.
struct CurlOptions: Sendable {
    var connectTimeout: Double
    /// Longest silence while waiting for or reading a response.
    var readTimeout: Double
    /// Connections per host for this engine (its share of `--jobs`).
    var connectionsPerHost: Int
    var streamsPerConnection: Int
    /// A PEM file of certificate authorities to trust besides libcurl's default folder of
    /// them; nil trusts libcurl's defaults alone.
    var trustedCertificates: String?
    /// Whether plain GETs reuse handles (`HandlePool`); nil: when the loaded libcurl can do
    /// so safely (8.1.0 or later).
    var reusesHandles: Bool? = nil

    /// A multi handle with these options; fails when libcurl cannot make one or refuses an
    /// option (every return code is checked).
    func makeMulti() throws(EngineStartFailure) -> UnsafeMutableRawPointer {
        guard let multi = worker_curl_multi_init() else {
            throw .library(name: "libcurl.so.4", reason: "it could not make a multi handle (out of memory)")
        }
        var refused: [String] = []
        func check(_ code: CURLMcode, _ option: String) { if code != CURLM_OK { refused.append("\(option) (code \(code.rawValue))") } }
        check(worker_curl_multi_set_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX)), "CURLMOPT_PIPELINING")
        check(
            worker_curl_multi_set_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, max(1, connectionsPerHost)),
            "CURLMOPT_MAX_HOST_CONNECTIONS")
        // Room to keep every connection the window uses: libcurl's default (four per transfer
        // added) shrinks as transfers end and are removed, and closed connections the window
        // then opened again (HTTPS HTTP/1.1 10k: 66–83 TLS handshakes instead of 50).
        check(worker_curl_multi_set_long(multi, CURLMOPT_MAXCONNECTS, 4 * max(1, connectionsPerHost)), "CURLMOPT_MAXCONNECTS")
        check(
            worker_curl_multi_set_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, max(1, streamsPerConnection)),
            "CURLMOPT_MAX_CONCURRENT_STREAMS")
        guard refused.isEmpty else {
            worker_curl_multi_cleanup(multi)
            throw .library(name: "libcurl.so.4", reason: "it refused " + refused.joined(separator: ", "))
        }
        return multi
    }

    /// The engine's share: TLS sessions kept across its handles (a new one per transfer), so
    /// a connection opened later resumes a session instead of a full handshake. Connections
    /// and DNS answers are the multi handle's already.
    static func makeShare() throws(EngineStartFailure) -> UnsafeMutableRawPointer {
        guard let share = worker_curl_share_init() else {
            throw .library(name: "libcurl.so.4", reason: "it could not make a share handle (out of memory)")
        }
        let code = worker_curl_share_set_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue))
        guard code == CURLSHE_OK else {
            worker_curl_share_cleanup(share)
            throw .library(name: "libcurl.so.4", reason: "it refused CURLSHOPT_SHARE (code \(code.rawValue))")
        }
        return share
    }

    /// A new handle with these options and `CurlTransfer`'s callbacks; a transfer sets its
    /// own URL, headers and context on it. Fails when libcurl cannot make one (out of memory)
    /// or refuses an option (a build without it): every option's return code is checked.
    func makeHandle(share: UnsafeMutableRawPointer) -> Result<UnsafeMutableRawPointer, FetchFailure> {
        guard let handle = worker_curl_easy_init() else {
            return .failure(FetchFailure(.io, "libcurl could not make a handle (out of memory)"))
        }
        var refused: [String] = []
        func check(_ code: CURLcode, _ option: String) {
            if code != CURLE_OK { refused.append("\(option) (\(String(cString: worker_curl_easy_strerror(code))))") }
        }
        check(worker_curl_set_long(handle, CURLOPT_NOSIGNAL, 1), "CURLOPT_NOSIGNAL")
        check(worker_curl_set_pointer(handle, CURLOPT_SHARE, share), "CURLOPT_SHARE")
        check(worker_curl_set_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)), "CURLOPT_HTTP_VERSION")
        // Wait for a connection that may multiplex rather than open another one.
        check(worker_curl_set_long(handle, CURLOPT_PIPEWAIT, 1), "CURLOPT_PIPEWAIT")
        check(
            worker_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Checked.milliseconds(connectTimeout, upTo: Int(Int32.max))),
            "CURLOPT_CONNECTTIMEOUT_MS")
        check(worker_curl_set_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"), "CURLOPT_PROTOCOLS_STR")
        // Proxies from the environment are not used (they never were): a manifest's origins
        // are reached directly.
        check(worker_curl_set_string(handle, CURLOPT_PROXY, ""), "CURLOPT_PROXY")
        // Said outright, so libcurl does not read no_proxy and NO_PROXY from the environment
        // for every transfer (it does even with no proxy set).
        check(worker_curl_set_string(handle, CURLOPT_NOPROXY, "*"), "CURLOPT_NOPROXY")
        // The bytes are stored as they came: never decoded (an encoded body is refused).
        check(worker_curl_set_long(handle, CURLOPT_HTTP_CONTENT_DECODING, 0), "CURLOPT_HTTP_CONTENT_DECODING")
        check(worker_curl_set_string(handle, CURLOPT_USERAGENT, "worker/1"), "CURLOPT_USERAGENT")
        check(worker_curl_set_long(handle, CURLOPT_BUFFERSIZE, 64 << 10), "CURLOPT_BUFFERSIZE")
        if let trustedCertificates { check(worker_curl_set_string(handle, CURLOPT_CAINFO, trustedCertificates), "CURLOPT_CAINFO") }
        for (code, option) in CurlTransfer.setCallbacks(handle) { check(code, option) }
        guard refused.isEmpty else {
            worker_curl_easy_cleanup(handle)
            return .failure(FetchFailure(.io, "libcurl refused " + refused.joined(separator: ", ")))
        }
        return .success(handle)
    }
}
