"""What the deployer configured for sign-in (see :mod:`dashboard.ui.auth` for the settings): the mode, the password
check, the cookie secret, the OIDC allow-list and the trusted proxies. Read by the page's sign-in form
(:mod:`dashboard.ui.auth`) and by the server's gate (:mod:`dashboard.ui.gate`) alike; it draws nothing."""

from __future__ import annotations

import base64
import hashlib
import hmac
import importlib.util
import ipaddress
import os
import secrets as _random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st
from streamlit.runtime.secrets import secrets_singleton

from dashboard.ui import settings

MIN_SECRET_CHARS = 32
SECRET_ENV, PROXIES_ENV = "RAGMETRICS_SIGNIN_SECRET", "RAGMETRICS_TRUSTED_PROXIES"

MODES = ("none", "password", "oidc")
PBKDF2_ITERATIONS = 600_000
_PBKDF2 = "pbkdf2_sha256"


# --- configuration -----------------------------------------------------------------------


def _has_auth_table() -> bool:
    """Whether ``secrets.toml`` has Streamlit's ``[auth]`` table (what ``st.login`` reads)."""
    try:
        return bool(secrets_singleton.load_if_toml_exists() and isinstance(st.secrets.get("auth"), Mapping))
    except Exception:
        return False


def missing_oidc_packages() -> list[str]:
    """What Streamlit's OIDC login needs and is not installed (``streamlit[auth]``: Authlib and httpx)."""
    return [
        name
        for name, module in (("Authlib", "authlib"), ("httpx", "httpx"))
        if importlib.util.find_spec(module) is None
    ]


@dataclass(frozen=True)
class AuthConfig:
    mode: str  # "none", "password", "oidc"
    check: Callable[[str], bool] | None = None  # password mode: is this the password?
    fingerprint: str = ""  # password mode: changes when the password does (signs everyone out)
    secret: str = ""  # password mode: the deployer's cookie secret; "": the store's (dashboard.data.signin)
    provider: str | None = None  # oidc mode: the [auth.NAME] provider, None for the default one
    allow: tuple[str, ...] = ()  # oidc mode: allowed e-mail addresses and "@domain"s; () lets everyone in
    problem: str | None = None  # set: sign-in is asked for but cannot work; the dashboard stays locked


def read_config() -> AuthConfig:
    """The sign-in the deployer configured (see the module docstring)."""
    table = settings.secrets_table()  # loading the secrets first also puts their root-level keys in the environment
    mode = settings.setting("RAGMETRICS_AUTH", "auth", table).lower()
    # the environment wins as a whole: a password set there hides both password keys of the secrets
    if os.environ.get("RAGMETRICS_PASSWORD_HASH", "").strip() or os.environ.get("RAGMETRICS_PASSWORD", "").strip():
        hashed, clear = (
            os.environ.get("RAGMETRICS_PASSWORD_HASH", "").strip(),
            os.environ.get("RAGMETRICS_PASSWORD", ""),
        )
    else:
        hashed, clear = str(table.get("password_hash", "") or "").strip(), str(table.get("password", "") or "")
    if not mode:
        mode = "password" if (hashed or clear.strip()) else "none"
    if mode in ("off", "false", "no"):
        mode = "none"
    if mode not in MODES:
        return AuthConfig(
            "password", problem=f"RAGMETRICS_AUTH (or auth in [ragmetrics]) is {mode!r}: use password, oidc or none."
        )
    if mode == "none":
        return AuthConfig("none")
    try:
        read_trusted_proxies()
    except ValueError as err:
        return AuthConfig(mode, problem=f"{PROXIES_ENV} (or trusted_proxies in [ragmetrics]): {err}.")
    if mode == "oidc":
        provider = settings.setting("RAGMETRICS_AUTH_PROVIDER", "auth_provider", table) or None
        allow = _allow_list(os.environ.get("RAGMETRICS_AUTH_ALLOW", "").strip() or table.get("auth_allow"))
        if not _has_auth_table():
            return AuthConfig(
                "oidc",
                provider=provider,
                problem=(
                    "OIDC sign-in is selected but .streamlit/secrets.toml has no [auth] table "
                    "(redirect_uri, cookie_secret and the provider's client_id, client_secret, server_metadata_url)."
                ),
            )
        missing = missing_oidc_packages()
        if missing:
            return AuthConfig(
                "oidc",
                provider=provider,
                problem=(
                    f'OIDC sign-in needs {" and ".join(missing)}: pip install "ragmetrics[dashboard,auth]" (or "streamlit[auth]").'
                ),
            )
        return AuthConfig("oidc", provider=provider, allow=allow)
    secret = settings.setting(SECRET_ENV, "signin_secret", table)
    if secret and len(secret) < MIN_SECRET_CHARS:
        return AuthConfig(
            "password",
            problem=(
                f"{SECRET_ENV} (or signin_secret in [ragmetrics]) has {len(secret)} characters: use at least "
                f'{MIN_SECRET_CHARS} random ones (python -c "import secrets; print(secrets.token_urlsafe(32))"), '
                "or unset it to use a random secret kept in the store."
            ),
        )
    if hashed:
        try:
            check = hash_checker(hashed)
        except ValueError as err:
            return AuthConfig("password", problem=f"RAGMETRICS_PASSWORD_HASH (or password_hash) is not usable: {err}")
        return AuthConfig("password", check, _fingerprint(hashed), secret)
    if clear.strip():
        want = hashlib.sha256(clear.encode()).digest()  # digests: equal lengths, so the time does not tell the length
        return AuthConfig(
            "password",
            lambda given: hmac.compare_digest(hashlib.sha256(given.encode()).digest(), want),
            _fingerprint(clear),
            secret,
        )
    return AuthConfig(
        "password",
        problem="Password sign-in is selected but no password is set (RAGMETRICS_PASSWORD or RAGMETRICS_PASSWORD_HASH).",
    )


def _allow_list(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, (list, tuple)) else str(value or "").split(",")
    return tuple(item.strip().lower() for item in map(str, items) if item.strip())


def allowed(email: str, allow: tuple[str, ...], verified: Any = None) -> bool:
    """Whether ``email`` may enter: everyone when ``allow`` is empty, else an exact address or an ``@domain``
    entry; an address the provider says is not verified (``email_verified`` false) never matches."""
    if not allow:
        return True
    email = email.strip().lower()
    if not email or "@" not in email or verified is False or str(verified).lower() == "false":
        return False
    domain = email[email.rindex("@") :]
    return email in allow or domain in allow


def _fingerprint(secret: str) -> str:
    return hashlib.sha256(b"ragmetrics-auth\0" + secret.encode()).hexdigest()


# --- password hashes ---------------------------------------------------------------------


def hash_password(password: str, *, iterations: int = PBKDF2_ITERATIONS, salt: str | None = None) -> str:
    """``pbkdf2_sha256$<iterations>$<salt>$<base64 digest>`` (the format Django uses too)."""
    salt = salt or _random.token_urlsafe(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), iterations)
    return f"{_PBKDF2}${iterations}${salt}${base64.b64encode(digest).decode()}"


def hash_checker(stored: str) -> Callable[[str], bool]:
    """The check for a stored hash: PBKDF2 (see :func:`hash_password`) or 64 hex digits of SHA-256."""
    stored = stored.strip()
    if stored.startswith(_PBKDF2 + "$"):
        parts = stored.split("$")
        if len(parts) != 4 or not parts[1].isdigit() or not parts[2]:
            raise ValueError(f"expected {_PBKDF2}$<iterations>$<salt>$<base64 digest>")
        iterations, salt = int(parts[1]), parts[2]
        try:
            expected = base64.b64decode(parts[3], validate=True)
        except ValueError:
            raise ValueError("the digest is not base64") from None
        if not 1 <= iterations <= 10_000_000 or len(expected) != 32:
            raise ValueError("iterations must be 1 to 10,000,000 and the digest 32 bytes")

        def check(given: str) -> bool:
            digest = hashlib.pbkdf2_hmac("sha256", given.encode(), salt.encode(), iterations)
            return hmac.compare_digest(digest, expected)

        return check
    hex_digits = stored.lower().removeprefix("sha256:")
    if len(hex_digits) == 64 and all(c in "0123456789abcdef" for c in hex_digits):
        return lambda given: hmac.compare_digest(hashlib.sha256(given.encode()).hexdigest(), hex_digits)
    raise ValueError(f"expected {_PBKDF2}$<iterations>$<salt>$<base64 digest> or 64 hex digits of SHA-256")


# --- trusted proxies -------------------------------------------------------------------------


def parse_proxies(value: Any) -> list[str]:
    """The trusted proxies of a setting: addresses or networks (``10.0.0.0/8``), comma-separated (or a list);
    ``*`` trusts every peer. ValueError naming an entry that is neither."""
    items = value if isinstance(value, (list, tuple)) else str(value or "").split(",")
    proxies = [str(item).strip() for item in items if str(item).strip()]
    for item in proxies:
        if item != "*":
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(f"{item!r} is not an IP address or network (e.g. 10.0.0.0/8) nor *") from None
    return proxies


def read_trusted_proxies() -> list[str]:
    """``RAGMETRICS_TRUSTED_PROXIES``, else ``trusted_proxies`` of ``[ragmetrics]`` in the secrets; [] when unset."""
    table = settings.secrets_table()
    return parse_proxies(os.environ.get(PROXIES_ENV, "").strip() or table.get("trusted_proxies", ""))
