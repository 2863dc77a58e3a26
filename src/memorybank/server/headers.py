"""What every answer of the server tells the browser about itself (issue 27, findings 7 and 14).

* ``Content-Security-Policy``: :data:`POLICY`. Scripts, styles, images and requests come from
  this server only, with no inline script or style, no ``eval``, no plugins, no ``<base>``,
  and forms post back here only. ``frame-ancestors 'none'``: no page, this server's own
  included, may show it in a frame, so a page of another site cannot lay the web UI under
  its own buttons (clickjacking).
* ``X-Frame-Options: DENY``: the same for browsers that predate ``frame-ancestors``.
* ``X-Content-Type-Options: nosniff``: a browser takes each answer as the type it is
  declared (a JSON answer is never run as a script, a text is never read as HTML).
* ``Referrer-Policy: no-referrer``: links leaving the UI do not tell where they came from.

An answer that already sets one of these keeps its own: the API documentation pages set
theirs, :data:`DOCS_POLICY` (``/docs``) and :data:`REDOC_POLICY` (``/redoc``), since Swagger
UI shows ``data:`` images and ReDoc builds inline styles at run time; neither runs an inline
script.

:func:`with_security_headers` puts :class:`SecurityHeaders` outside every other layer, even
Starlette's handler of unexpected errors, so a 500 carries them too.

    >>> POLICY.split("; ")[-1]
    "frame-ancestors 'none'"
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: The directives of :data:`POLICY`.
_DIRECTIVES: dict[str, str] = {
    "default-src": "'none'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self'",
    "connect-src": "'self'",
    "font-src": "'self'",
    "manifest-src": "'self'",
    "base-uri": "'none'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}


def policy(**more: str) -> str:
    """:data:`POLICY` with some directives replaced (``img_src="'self' data:"``).

    >>> "img-src 'self' data:;" in policy(img_src="'self' data:")
    True
    """
    directives = {**_DIRECTIVES, **{name.replace("_", "-"): value for name, value in more.items()}}
    return "; ".join(f"{name} {value}" for name, value in directives.items())


#: The web UI's policy, and every other answer's.
POLICY = policy()

#: ``/docs``: Swagger UI draws some icons as ``data:`` images.
DOCS_POLICY = policy(img_src="'self' data:")

#: ``/redoc``: ReDoc builds its styles at run time (inline) and searches in a worker it
#: starts from a ``blob:`` URL. Its footer's logo, from a CDN, stays blocked (ReDoc then
#: leaves it out).
REDOC_POLICY = policy(
    style_src="'self' 'unsafe-inline'", img_src="'self' data:", worker_src="blob:"
)

#: The headers, as ASGI sends them.
HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


class SecurityHeaders:
    """ASGI middleware adding :data:`HEADERS` to every HTTP answer that does not set them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {name.lower() for name, _ in headers}
                headers += [header for header in HEADERS if header[0] not in present]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def with_security_headers(app: FastAPI) -> None:
    """Wrap ``app``'s whole middleware stack in :class:`SecurityHeaders` (outside Starlette's
    own error handler, which ``add_middleware`` cannot reach)."""
    build: Callable[[], ASGIApp] = app.build_middleware_stack

    def build_with_headers() -> ASGIApp:
        return SecurityHeaders(build())

    app.build_middleware_stack = build_with_headers  # type: ignore[method-assign]


__all__ = [
    "DOCS_POLICY",
    "HEADERS",
    "POLICY",
    "REDOC_POLICY",
    "SecurityHeaders",
    "policy",
    "with_security_headers",
]
