"""HTTP/1.1 over a byte stream (`labsupport.httpstream`): requests as curl writes them, responses framed by
Content-Length, chunked coding or the end of the stream, several in a row on one stream, whatever the chunking."""
from __future__ import annotations

import pytest

from labsupport.httpstream import MalformedResponse, ResponseReader, StreamEnded, request_bytes


def reader(data: bytes, size: int | None = None) -> ResponseReader:
    """A reader over `data`, handed over in pieces of `size` bytes (all at once when None)."""
    pieces = [data] if size is None else [data[i:i + size] for i in range(0, len(data), size)]
    stream = iter(pieces)
    return ResponseReader(lambda: next(stream, b""))


NGINX = (b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nContent-Type: text/html\r\nContent-Length: 12\r\n"
         b"Connection: keep-alive\r\n\r\nhello nginx\n")
CHUNKED = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"4\r\nWiki\r\n7;ext=1\r\npedia i\r\nB\r\nn \r\nchunks.\r\n0\r\nX-Trailer: yes\r\n\r\n")


def test_a_request_is_written_as_curl_writes_it():
    assert request_bytes("GET", "/clientip?x=1", "web:8080") == (
        b"GET /clientip?x=1 HTTP/1.1\r\nHost: web:8080\r\nUser-Agent: curl/8.11.1\r\nAccept: */*\r\n\r\n")
    assert request_bytes("GET", "/", "web", {"User-Agent": "probe", "X-Tag": "7"}) == (
        b"GET / HTTP/1.1\r\nHost: web\r\nAccept: */*\r\nUser-Agent: probe\r\nX-Tag: 7\r\n\r\n")


@pytest.mark.parametrize("bad", [("GET", "/\r\nX: 1", "web"), ("GET", "/", "web\nEvil: 1"), ("GET", "nope", "web")])
def test_a_request_that_would_split_or_has_no_path_is_refused(bad):
    with pytest.raises(ValueError):
        request_bytes(*bad)


@pytest.mark.parametrize("size", [None, 1, 3, 17])
def test_a_content_length_body_is_read_exactly_whatever_the_pieces(size):
    response = reader(NGINX, size).read()
    assert (response.version, response.status, response.reason) == ("HTTP/1.1", 200, "OK")
    assert response.body == b"hello nginx\n" and response.text == "hello nginx\n"
    assert response.header("content-length") == "12" and response.header("Server") == "nginx/1.22.1"
    assert response.keep_alive


@pytest.mark.parametrize("size", [None, 1, 5])
def test_a_chunked_body_is_joined_and_its_trailer_consumed(size):
    r = reader(CHUNKED + NGINX, size)
    assert r.read().body == b"Wikipedia in \r\nchunks."
    assert r.read().body == b"hello nginx\n", "the trailer's end was left in the buffer"


def test_chunked_wins_over_content_length():
    data = CHUNKED.replace(b"Transfer-Encoding: chunked\r\n", b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n")
    assert reader(data).read().body == b"Wikipedia in \r\nchunks."


@pytest.mark.parametrize("size", [None, 2])
def test_responses_in_a_row_on_one_stream_each_get_their_own_body(size):
    second = b"HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\n\r\nnot found\n"
    r = reader(NGINX + second + NGINX, size)
    assert [(x.status, x.body) for x in (r.read(), r.read(), r.read())] == [
        (200, b"hello nginx\n"), (404, b"not found\n"), (200, b"hello nginx\n")]
    with pytest.raises(StreamEnded):
        r.read()


def test_no_body_for_head_204_and_304_even_with_a_length():
    head = reader(NGINX.replace(b"hello nginx\n", b"") + NGINX).read(method="HEAD")
    assert head.body == b"" and head.status == 200
    r = reader(b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n" + NGINX)
    assert r.read().status == 204 and r.read().body == b""
    assert r.read().body == b"hello nginx\n"


def test_an_interim_100_is_skipped():
    response = reader(b"HTTP/1.1 100 Continue\r\n\r\n" + NGINX).read()
    assert response.status == 200 and response.body == b"hello nginx\n"


def test_without_a_length_the_body_runs_to_the_end_and_ends_the_connection():
    response = reader(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it\nuntil the close", 4).read()
    assert response.body == b"all of it\nuntil the close"
    assert response.to_close and not response.keep_alive


@pytest.mark.parametrize("head,kept", [
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", False),
    (b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, Upgrade\r\nContent-Length: 0\r\n\r\n", True),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", False),
    (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", True),
])
def test_whether_the_server_keeps_the_connection(head, kept):
    assert reader(head).read().keep_alive is kept


def test_a_stream_ending_inside_the_body_says_how_much_came():
    with pytest.raises(StreamEnded) as caught:
        reader(NGINX[:-5], 7).read()
    assert caught.value.received == len(NGINX) - 5


def test_a_stream_ending_before_any_byte_received_nothing():
    with pytest.raises(StreamEnded) as caught:
        reader(b"").read()
    assert caught.value.received == 0


@pytest.mark.parametrize("data,quoted", [
    (b"SSH-2.0-OpenSSH_9.2\r\n\r\n", "SSH-2.0"),
    (b"HTTP/1.1 2x0 OK\r\n\r\n", "2x0"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "no colon"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello", "5, 6"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "-1"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "zz"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n", "CRLF"),
])
def test_what_is_not_http_is_refused_quoting_the_part(data, quoted):
    with pytest.raises(MalformedResponse, match=quoted.replace("-", r"\-")):
        reader(data).read()


def test_an_endless_header_is_refused():
    with pytest.raises(MalformedResponse, match="exceed"):
        reader(b"HTTP/1.1 200 OK\r\n" + b"X-Long: " + b"a" * 70000 + b"\r\n\r\n").read()


def test_a_line_is_read_with_or_without_its_carriage_return():
    r = reader(b"labsupport-nc 42\nHTTP/1.1 204 No Content\r\n\r\n")
    assert r.read_line() == b"labsupport-nc 42"
    assert r.read().status == 204
