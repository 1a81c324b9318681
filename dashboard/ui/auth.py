"""Optional sign-in, run by the router before any page: a shared password, or Streamlit's OIDC login.

Configuration (the environment wins over the ``[ragmetrics]`` table of ``.streamlit/secrets.toml``):

=============================  ==================  =====================================================
environment                    ``[ragmetrics]``    meaning
=============================  ==================  =====================================================
``RAGMETRICS_AUTH``            ``auth``            ``password``, ``oidc`` or ``none``; unset: ``password``
                                                   when a password is set, else ``none`` (no sign-in)
``RAGMETRICS_PASSWORD``        ``password``        the shared password, in clear
``RAGMETRICS_PASSWORD_HASH``   ``password_hash``   its hash: ``pbkdf2_sha256$<iterations>$<salt>$<base64>``
                                                   (print one with ``python -m dashboard.ui.auth``),
                                                   or 64 hex digits of an unsalted SHA-256
``RAGMETRICS_SIGNIN_SECRET``   ``signin_secret``   password: the secret sign-in cookies are signed with (at least
                                                   32 characters); unset: a random one kept in the store
``RAGMETRICS_TRUSTED_PROXIES`` ``trusted_proxies`` the proxies whose ``X-Forwarded-For`` names the client:
                                                   addresses or networks, comma-separated; unset: none
``RAGMETRICS_AUTH_PROVIDER``   ``auth_provider``   OIDC: the provider, a ``[auth.NAME]`` table (optional)
``RAGMETRICS_AUTH_ALLOW``      ``auth_allow``      OIDC: who may enter, comma-separated addresses and
                                                   ``@domain`` entries (a TOML list too); unset: anyone
                                                   the provider signs in
=============================  ==================  =====================================================

OIDC uses Streamlit's own login (``st.login``, an ``[auth]`` table in ``secrets.toml``, the Authlib and httpx
packages: ``pip install "ragmetrics[dashboard,auth]"``). A configuration that asks for sign-in but cannot give it
(no password, unknown mode, a bad hash, no ``[auth]`` table, no Authlib) locks the dashboard and says why.

The password sign-in lasts for the browser session (a reload or a new tab asks again). The page and the
query of the address that was opened are left alone, so a share link opens its view after sign-in.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import streamlit as st

from dashboard.core.text import md_escape
from dashboard.ui.gate import COOKIE, SIDEBAR_BUTTON_STYLE, sign_out_form, signed_in
from dashboard.ui.signin_config import AuthConfig, allowed, hash_password, read_config

MAX_FAILURES = 5  # wrong passwords in a row (per session) before a pause
LOCKOUT_SECONDS = 30.0
_SIGNED_IN = "ragmetrics.auth.signed_in"  # the fingerprint of the password configuration that was passed
_FAILURES = "ragmetrics.auth.failures"
_LOCKED_UNTIL = "ragmetrics.auth.locked_until"
clock: Callable[[], float] = time.monotonic  # tests replace it to pass the lockout without waiting


# --- the gate ----------------------------------------------------------------------------


def gate() -> bool:
    """True when this session may see the dashboard (a sign-out control is then in the sidebar).

    Otherwise draw only the sign-in form and return False: the router then runs no page. Nothing here
    touches the URL, so the page and query that were opened (a share link) open once signed in.
    """
    config = read_config()
    if config.mode == "none":
        return True
    if config.problem:
        _panel().error(
            config.problem + " The deployer must fix the configuration; until then the dashboard stays locked.",
            icon=":material/lock:",
        )
        return False
    if config.mode == "oidc":
        return _oidc_gate(config)
    return _password_gate(config)


def _panel() -> Any:
    """The centred column the sign-in is drawn in, headed by the app's name."""
    _, middle, _ = st.columns([1, 2, 1])
    middle.title("ragmetrics", anchor=False)
    middle.caption("This dashboard requires sign-in.")
    return middle


def _signed_in_at_the_gate(config: AuthConfig) -> bool:
    """True when the browser carries a sign-in cookie the server's gate accepts for this password, not signed out
    (dashboard.ui.gate)."""

    try:
        value = st.context.cookies.get(COOKIE)
    except Exception:
        return False
    return signed_in(value, config.fingerprint)


def _password_gate(config: AuthConfig) -> bool:
    assert config.check is not None
    if _signed_in_at_the_gate(config):
        # the gate's own form in this tab (st.link_button opens a new one): it revokes the cookie and asks again
        st.sidebar.markdown(sign_out_form(button_style=SIDEBAR_BUTTON_STYLE), unsafe_allow_html=True)
        return True
    if st.session_state.get(_SIGNED_IN) == config.fingerprint:
        if st.sidebar.button("Sign out", key="auth.sign_out", icon=":material/logout:"):
            sign_out()
        return True
    middle = _panel()
    with middle, st.form("auth.form", clear_on_submit=True, enter_to_submit=True):
        # no key: the password is not kept in session state, and the form clears it after each submit
        password = st.text_input("Password", type="password", autocomplete="current-password")
        submitted = st.form_submit_button("Sign in", type="primary", icon=":material/login:")
    if not submitted:
        return False
    now = clock()
    wait = float(st.session_state.get(_LOCKED_UNTIL, 0.0)) - now
    if wait > 0:
        middle.error(f"Too many wrong passwords. Try again in {math.ceil(wait)} s.", icon=":material/timer:")
        return False
    if password and config.check(password):
        st.session_state[_SIGNED_IN] = config.fingerprint
        st.session_state.pop(_FAILURES, None)
        st.session_state.pop(_LOCKED_UNTIL, None)
        st.rerun()  # draw the page the address asks for, without the form
    failures = int(st.session_state.get(_FAILURES, 0)) + 1
    if failures >= MAX_FAILURES:
        st.session_state[_LOCKED_UNTIL] = now + LOCKOUT_SECONDS
        failures = 0
        middle.error(
            f"Wrong password. Too many tries: wait {int(LOCKOUT_SECONDS)} s before the next one.",
            icon=":material/timer:",
        )
    else:
        middle.error("Wrong password.", icon=":material/error:")
    st.session_state[_FAILURES] = failures
    return False


def sign_out() -> None:
    """Forget this session's password sign-in and show the form again (the address stays as it is)."""
    for key in (_SIGNED_IN, _FAILURES, _LOCKED_UNTIL):
        st.session_state.pop(key, None)
    st.rerun()


def _oidc_gate(config: AuthConfig) -> bool:
    from streamlit.errors import StreamlitAuthError

    if st.user.get("is_logged_in", False):
        email = str(st.user.get("email") or "")
        if not allowed(email, config.allow, st.user.get("email_verified")):
            with _panel():
                st.error(
                    f"{md_escape(email or 'This account')} may not open this dashboard. "
                    "Sign out and use another account, or ask the dashboard's deployer for access.",
                    icon=":material/block:",
                )
                if st.button("Sign out", key="auth.sign_out", icon=":material/logout:"):
                    st.logout()
                    st.stop()
            return False
        who = st.user.get("name") or email
        with st.sidebar:
            if who:
                st.caption(f"Signed in as {md_escape(str(who))}")
            if st.button("Sign out", key="auth.sign_out", icon=":material/logout:"):
                st.logout()  # ends the session: the browser is sent to the provider's or the app's sign-out
                st.stop()
        return True
    with _panel():
        st.write("Sign in with your organisation's account to open the dashboard.")
        if st.query_params:  # Streamlit's login returns to the home page: the link's view is not kept
            st.caption("After signing in you arrive on the home page: open the link you were given again.")
        if st.button("Sign in", key="auth.login", type="primary", icon=":material/login:"):
            try:
                st.login(config.provider)  # None: the [auth] table's own provider
            except StreamlitAuthError as err:
                st.error(f"Sign-in is not configured correctly: {err}", icon=":material/error:")
    return False


def user_name() -> str:
    """Who is signed in, for the labels they give: the OIDC account's e-mail address (else its name);
    "anonymous" with a shared password (it names no one) or without sign-in."""
    try:
        if read_config().mode == "oidc" and st.user.get("is_logged_in", False):
            return str(st.user.get("email") or st.user.get("name") or "anonymous")
    except Exception:  # no user information in this context (a bare script run)
        pass
    return "anonymous"


def _main() -> None:
    """``python -m dashboard.ui.auth``: ask for a password (twice) and print its PBKDF2 hash."""
    import getpass
    import sys

    try:
        first = getpass.getpass("Password: ")
        again = getpass.getpass("Again: ") if first else ""
    except EOFError:  # the input ended before both passwords were read (a pipe of one line, Ctrl-D)
        sys.exit("No password read: the input ended before the password was given twice.")
    if not first or first != again:
        sys.exit("The passwords are empty or differ.")
    print(hash_password(first))


if __name__ == "__main__":
    _main()
