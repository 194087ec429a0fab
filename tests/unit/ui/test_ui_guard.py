"""The page's guard (ADR 0224), decided without a server: the Host header first, then the
method, then the token (in the URL, traded for the cookie; else the cookie)."""

from __future__ import annotations

from lcg.ui.guard import COOKIE, Guard, new_token

PORT = 8765


def _guard() -> tuple[Guard, str]:
    token = new_token()
    return Guard(token, PORT), token


def test_tokens_are_32_random_bytes_urlsafe() -> None:
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50
    assert all(len(t) == 43 and t.replace("-", "").replace("_", "").isalnum() for t in tokens)


def test_the_host_is_checked_before_anything_else() -> None:
    guard, token = _guard()
    cookie = f"{COOKIE}={token}"
    for host in (None, "", "evil.test:8765", "127.0.0.1", "127.0.0.1:8766", "LOCALHOST:8765"):
        assert guard.check("GET", "/", host, cookie).status == 403, host
        assert guard.check("POST", f"/?token={token}", host, None).status == 403, host
    for host in ("127.0.0.1:8765", "localhost:8765"):
        assert guard.check("GET", "/", host, cookie).status == 0


def test_only_get_and_head_pass() -> None:
    guard, token = _guard()
    cookie = f"{COOKIE}={token}"
    for method in ("POST", "PUT", "DELETE", "OPTIONS", "BREW", "get"):
        assert guard.check(method, "/", "127.0.0.1:8765", cookie).status == 405, method
    assert guard.check("HEAD", "/", "127.0.0.1:8765", cookie).status == 0


def test_the_token_is_traded_for_the_cookie() -> None:
    guard, token = _guard()
    v = guard.check("GET", f"/search?q=a+b&token={token}&group=g", "localhost:8765", None)
    assert v.status == 303 and v.location == "/search?q=a+b&group=g"
    assert v.cookie == f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
    assert guard.check("GET", f"/?token={token}", "localhost:8765", None).location == "/"
    assert guard.check("GET", "/?token=nope", "localhost:8765", None).status == 403
    assert guard.check("GET", "/", "localhost:8765", None).status == 403
    assert guard.check("GET", "/", "localhost:8765", f"{COOKIE}=nope").status == 403
    assert guard.check("GET", "/", "localhost:8765", "other=1; bad cookie ;;").status == 403
    assert guard.check("GET", "/", "localhost:8765", f"x=1; {COOKIE}={token}").status == 0
