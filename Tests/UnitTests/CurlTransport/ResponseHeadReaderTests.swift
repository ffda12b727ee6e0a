import Testing

@testable import CurlTransport

/// The head read a line at a time, as libcurl hands it over: no I/O.
@Suite struct ResponseHeadReaderTests {
    /// Feeds `lines`; whether the last one ended the final head.
    static func read(_ lines: [String], into head: inout ResponseHeadReader) -> Bool {
        var ended = false
        for line in lines {
            ended = Array(line.utf8).withUnsafeBytes { head.take($0) }
        }
        return ended
    }

    @Test func anInformationalHeadIsDroppedAndTheFinalOneKept() {
        var head = ResponseHeadReader()
        #expect(!Self.read(["HTTP/1.1 100 Continue", "ETag: \"early\"", ""], into: &head), "a 1xx head does not end it")
        #expect(head.values("etag").isEmpty)
        #expect(Self.read(["HTTP/1.1 200 OK", "etag:  \"v1\" \t", "X-Other: dropped", "Content-Length: 3", ""], into: &head))
        #expect(head.isDone && head.status == 200 && head.version == (1, 1))
        #expect(head.values("etag") == ["\"v1\""] && head.values("content-length") == ["3"])
        #expect(head.values("x-other").isEmpty, "only the handler's headers and Connection are kept")
        head.dropHeaders()
        #expect(head.values("etag").isEmpty)
    }

    /// Names match in any case, whole: one of a kept name's length that differs by a byte is not kept.
    @Test func namesMatchInAnyCaseAndWhole() {
        var head = ResponseHeadReader()
        #expect(
            Self.read(
                [
                    "HTTP/1.1 200 OK", "Last-MODIFIED: a", "last-modifiex: b", "LAST-MODIFIED:c", "etag2: d",
                    "Content-Length : 4", "",
                ], into: &head))
        #expect(head.values("last-modified") == ["a", "c"])
        #expect(head.values("etag").isEmpty && head.values("content-length").isEmpty)
        var notStatus = ResponseHeadReader()
        _ = Self.read(["HTTP 200 OK", "http/1.1 200 OK", ""], into: &notStatus)
        #expect(notStatus.status == 0, "a status line starts with HTTP/ exactly")
    }

    /// Lines as libcurl hands them over, line ends included: the blank one ends the head, and a
    /// trailer after it is not read. Kept names of one length are told apart by their text.
    @Test func linesWithTheirEndsEndTheHeadAndTrailersAreNotRead() {
        var head = ResponseHeadReader()
        func take(_ line: String) -> Bool { Array(line.utf8).withUnsafeBytes { head.takeLine($0) } }
        #expect(!take("HTTP/1.1 200 OK\r\n"))
        #expect(!take("Content-Range: bytes 0-1/2\r\n"))
        #expect(!take("Last-Modified: yesterday\n"))
        #expect(take("\r\n"))
        #expect(!take("ETag: \"trailer\"\r\n"), "after the head, a trailer")
        #expect(head.values("last-modified") == ["yesterday"] && head.values("content-range") == ["bytes 0-1/2"])
        #expect(head.values("etag").isEmpty)
    }

    @Test func theConnectionStaysOpenByVersionAndConnectionHeader() {
        func keepsAlive(_ lines: [String]) -> Bool {
            var head = ResponseHeadReader()
            _ = Self.read(lines + [""], into: &head)
            return head.keepsAlive
        }
        #expect(keepsAlive(["HTTP/1.1 200 OK"]))
        #expect(!keepsAlive(["HTTP/1.1 200 OK", "CONNECTION: Close"]))
        #expect(!keepsAlive(["HTTP/1.0 200 OK"]))
        #expect(keepsAlive(["HTTP/1.0 200 OK", "Connection: keep-alive"]))
        #expect(keepsAlive(["HTTP/2 404", "connection: close"]))
        var http2 = ResponseHeadReader()
        _ = Self.read(["HTTP/2 404", ""], into: &http2)
        #expect(http2.status == 404 && http2.version.major == 2)
    }
}
