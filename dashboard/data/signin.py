"""What the sign-in gate (:mod:`dashboard.ui.gate`) keeps in the store, so every server sharing the store agrees:

* ``signin_keys``: the random secret the sign-in cookies are signed with, made by the first server that needs it
  (unless the deployer sets one, ``RAGMETRICS_SIGNIN_SECRET``);
* ``signin_revoked``: the sign-ins that were ended (signed out) before their cookie expired, by session id, until
  that expiry.

Anyone who can read the store can read the secret: a deployer who keeps the store less guarded than the server sets
the secret instead.
"""

from __future__ import annotations

import secrets
import time

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from ragmetrics.store.database import Store

metadata = sa.MetaData()
keys_table = sa.Table(
    "signin_keys",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)
revoked_table = sa.Table(
    "signin_revoked",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("expires_at", sa.Float, nullable=False, index=True),
)
COOKIE_KEY = "cookie"


class SignInStore:
    """The sign-in tables of the store at ``url`` (created when missing)."""

    def __init__(self, url: str) -> None:
        self.engine = Store(url).engine  # the store's own engine settings (SQLite pragmas, connect timeout)
        metadata.create_all(self.engine, checkfirst=True)

    def _insert(self, table: sa.Table):
        return (postgresql if self.engine.dialect.name == "postgresql" else sqlite).insert(table)

    def secret(self) -> bytes:
        """The store's cookie secret: made (32 random bytes) by the first caller; every later one reads it."""
        with self.engine.begin() as conn:
            conn.execute(
                self._insert(keys_table)
                .values(name=COOKIE_KEY, value=secrets.token_urlsafe(32), created_at=time.time())
                .on_conflict_do_nothing(index_elements=["name"])
            )
            value = conn.execute(sa.select(keys_table.c.value).where(keys_table.c.name == COOKIE_KEY)).scalar_one()
        return str(value).encode()

    def revoke(self, session: str, expires_at: float) -> None:
        """End the sign-in ``session`` (its cookie is refused until ``expires_at``, when it would expire anyway)."""
        with self.engine.begin() as conn:
            conn.execute(
                self._insert(revoked_table)
                .values(id=session, expires_at=float(expires_at))
                .on_conflict_do_nothing(index_elements=["id"])
            )
            conn.execute(sa.delete(revoked_table).where(revoked_table.c.expires_at < time.time()))

    def revoked(self) -> set[str]:
        """The ended sign-ins whose cookies have not expired yet."""
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(revoked_table.c.id).where(revoked_table.c.expires_at >= time.time()))
            return {str(row[0]) for row in rows}
