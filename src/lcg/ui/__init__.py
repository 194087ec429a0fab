"""``lcg ui``'s page: a local web page over the workspace's service (ADR 0224).

A stdlib HTTP server on 127.0.0.1 (``server``) behind a token, a Host check and a strict
Content-Security-Policy (``guard``), rendering views server-side (``home``, ``search``,
``entity``, ``sources``, ``health``, ``quality``) from the service's read methods only
(``reads``), with text escaped by construction (``html``).
"""

from __future__ import annotations

from lcg.ui.guard import COOKIE, CSP, SECURITY_HEADERS, Guard, new_token
from lcg.ui.reads import READS, ReadRefused, Reads
from lcg.ui.server import UiServer
from lcg.ui.site import Site

__all__ = [
    "COOKIE",
    "CSP",
    "READS",
    "SECURITY_HEADERS",
    "Guard",
    "ReadRefused",
    "Reads",
    "Site",
    "UiServer",
    "new_token",
]
