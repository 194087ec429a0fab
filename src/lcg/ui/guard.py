"""The page's guards (ADR 0224): who may ask, and what every answer says about itself.

* **Token.** 32 random bytes, URL-safe, made when ``lcg ui`` starts and printed in its URL.
  ``?token=`` on any URL, when right, sets the ``lcg_ui`` cookie (HttpOnly, SameSite=Strict,
  Path=/) and redirects (303) to the same URL without it; every other request needs the
  cookie. A missing or wrong token is 403. Compared in constant time.
* **Host.** The ``Host`` header must be exactly ``127.0.0.1:<port>`` or ``localhost:<port>``
  (a page of another site whose name was rebound to 127.0.0.1 sends its own name: 403).
* **Methods.** GET and HEAD only; any other is 405, whatever its name.
* **Headers.** Every answer carries ``SECURITY_HEADERS``: a policy that lets the page load
  only its own files, no sniffing, no referrer, no caching; and no CORS header ever.
"""

from __future__ import annotations

import hmac
import secrets
from http.cookies import CookieError, SimpleCookie
from typing import Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = [
    "COOKIE",
    "CSP",
    "SECURITY_HEADERS",
    "Guard",
    "Verdict",
    "new_token",
]

#: The cookie that carries the token after the first visit.
COOKIE: Final = "lcg_ui"
#: The page's Content-Security-Policy: its own scripts, styles and fetches, nothing else.
CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
#: Sent with every answer, pages, assets and refusals alike.
SECURITY_HEADERS: Final = (
    ("Content-Security-Policy", CSP),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
    ("X-Frame-Options", "DENY"),
)
#: The methods the page answers; any other is 405.
METHODS: Final = frozenset({"GET", "HEAD"})
_TOKEN_PARAM: Final = "token"


def new_token() -> str:
    """A fresh token: 32 random bytes, URL-safe base64."""
    return secrets.token_urlsafe(32)


class Verdict:
    """What the guard decided: ``status`` 0 to serve the request, else the refusal's status;
    ``location``/``cookie`` for the redirect that trades a URL's token for the cookie."""

    __slots__ = ("cookie", "location", "reason", "status")

    def __init__(self, status: int, reason: str = "", location: str = "", cookie: str = "") -> None:
        """A verdict (see the class)."""
        self.status = status
        self.reason = reason
        self.location = location
        self.cookie = cookie


class Guard:
    """The checks of one ``lcg ui`` server: its token and the port it is bound to."""

    def __init__(self, token: str, port: int) -> None:
        """Guard a server on 127.0.0.1:``port`` with ``token``."""
        #: The token, as the URL ``lcg ui`` prints carries it.
        self.token = token
        self._token = token.encode()
        self.hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})

    def _right(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self._token)

    def check(self, method: str, target: str, host: str | None, cookie: str | None) -> Verdict:
        """The verdict on one request: Host first, then its method, then the token (in the
        URL: a redirect setting the cookie; else the cookie)."""
        if host is None or host not in self.hosts:
            return Verdict(403, "this page answers only at 127.0.0.1 or localhost")
        if method not in METHODS:
            return Verdict(405, "the page only reads: GET and HEAD")
        parts = urlsplit(target)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        given = [v for k, v in pairs if k == _TOKEN_PARAM]
        if given:
            if len(given) != 1 or not self._right(given[0]):
                return Verdict(403, "wrong token: open the URL lcg ui printed")
            rest = urlencode([(k, v) for k, v in pairs if k != _TOKEN_PARAM])
            location = urlunsplit(("", "", parts.path or "/", rest, ""))
            value = self._token.decode()
            cookie_header = f"{COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/"
            return Verdict(303, "", location=location, cookie=cookie_header)
        if not self._cookie_right(cookie):
            return Verdict(403, "no token: open the URL lcg ui printed")
        return Verdict(0)

    def _cookie_right(self, header: str | None) -> bool:
        if not header:
            return False
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(header)
        except CookieError:
            return False
        morsel = jar.get(COOKIE)
        return morsel is not None and self._right(morsel.value)
