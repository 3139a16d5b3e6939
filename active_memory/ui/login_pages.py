"""Logging in and out of the web view (ui/auth.py has the rules).

After a login the person lands on the page they asked for (`next`, a path of this view
only: web.py's `safe_next`), not on the lessons page.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from active_memory.ui.auth import LOGIN_CODE_SECONDS
from active_memory.ui.web import WebView, base, cookie_name, safe_next


async def login(view: WebView, request: Request) -> Response:
    """GET with the one-time code (the printed link), or POST the server's token; then
    back to `next`."""
    if request.method == "POST":
        form = await request.form()
        token = form.get("token")
        wanted = form.get("next")
        ok = isinstance(token, str) and view.gate.token_matches(token)
    else:
        ok = view.gate.redeem_code(request.query_params.get("code", ""))
        wanted = request.query_params.get("next")
    back = safe_next(wanted if isinstance(wanted, str) else "/")
    if not ok:
        return view.render(request, None, "login.html", {"failed": True, "next": back},
                           status=403)  # fmt: skip
    response = RedirectResponse(f"{base(request)}{back}", status_code=303)
    response.set_cookie(
        cookie_name(request), view.gate.open_session(), httponly=True, samesite="strict",
        path=f"{base(request)}/",
    )  # fmt: skip
    return response


async def new_login_code(view: WebView, request: Request) -> Response:
    """A fresh one-time login code, for the bearer of the server's token only
    (`active-memory ui --link` asks the running `serve` for one)."""
    if not view.gate.bearer_ok(request.headers.get("authorization")):
        return JSONResponse({"error": "missing or wrong token"}, status_code=401)
    return JSONResponse(
        {"code": view.gate.new_login_code(), "login_path": f"{base(request)}/login",
         "valid_seconds": LOGIN_CODE_SECONDS},
        headers={"Cache-Control": "no-store"},
    )  # fmt: skip


async def logout(view: WebView, request: Request) -> Response:
    """End this browser's session (CSRF-checked like every write)."""
    cookie = cookie_name(request)
    session = view.gate.session(request.cookies.get(cookie))
    if session is not None and await view.form(request, session) is not None:
        view.gate.close_session(request.cookies.get(cookie))
    response = RedirectResponse(f"{base(request)}/", status_code=303)
    response.delete_cookie(cookie, path=f"{base(request)}/")
    return response
