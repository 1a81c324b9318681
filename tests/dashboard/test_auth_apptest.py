"""Optional sign-in (``dashboard.ui.auth``) under Streamlit's AppTest: the router shows only the sign-in form, runs no
page and never opens the store until the session is signed in; without configuration nothing changes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.ui import auth, cache, signin_config
from tests.dashboard.apptest import figure_specs, open_app, param

pytestmark = pytest.mark.apptest

PASSWORD = "correct horse battery staple"
AUTH_ENV = (
    "RAGMETRICS_AUTH",
    "RAGMETRICS_PASSWORD",
    "RAGMETRICS_PASSWORD_HASH",
    "RAGMETRICS_AUTH_PROVIDER",
    "RAGMETRICS_AUTH_ALLOW",
)
OIDC_PACKAGES = (
    not signin_config.missing_oidc_packages()
)  # Authlib and httpx really installed (checked before any stub)
AUTH_TABLE = """
[auth]
redirect_uri = "http://localhost:8501/oauth2callback"
cookie_secret = "not-a-real-secret-only-for-tests-0123456789"
client_id = "ragmetrics-test"
client_secret = "not-a-real-client-secret"
server_metadata_url = "http://127.0.0.1:9/.well-known/openid-configuration"
"""


@pytest.fixture(autouse=True)
def _no_auth_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts without sign-in settings, whatever the developer's shell or secrets hold: Streamlit reads
    secrets only from ``tmp_path/secrets.toml``, which does not exist until ``secrets_toml`` writes it."""
    from streamlit import config
    from streamlit.runtime.secrets import secrets_singleton

    for name in AUTH_ENV:
        monkeypatch.delenv(name, raising=False)
    saved = config.get_option("secrets.files")
    config.set_option("secrets.files", [str(tmp_path / "secrets.toml")])
    secrets_singleton._reset()
    monkeypatch.setattr(secrets_singleton, "_file_watchers_installed", True)  # no polling thread in tests
    yield
    config.set_option("secrets.files", saved)
    secrets_singleton._reset()


@pytest.fixture
def store_opened(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the calls of the one door to stored data (``cache.get_workspace``)."""
    calls: list[int] = []
    real = cache.get_workspace

    def counting():  # type: ignore[no-untyped-def]
        calls.append(1)
        return real()

    monkeypatch.setattr(cache, "get_workspace", counting)
    return calls


@pytest.fixture
def secrets_toml(tmp_path: Path) -> Callable[[str], None]:
    """Write the ``secrets.toml`` Streamlit reads in these tests (a real file, read by the real code)."""
    from streamlit.runtime.secrets import secrets_singleton

    def write(text: str) -> None:
        (tmp_path / "secrets.toml").write_text(text)
        secrets_singleton._reset()

    return write


def _texts(at: AppTest) -> list[str]:
    """Everything the run wrote as text, to check the password is never echoed."""
    out: list[str] = []
    for kind in (
        "title",
        "header",
        "subheader",
        "markdown",
        "caption",
        "error",
        "warning",
        "info",
        "success",
        "code",
        "text",
    ):
        out += [str(e.value) for e in at.get(kind)]
    return out


def _assert_locked(at: AppTest, store_opened: list[int]) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title] == ["ragmetrics"]  # no page title
    assert not figure_specs(at) and not at.dataframe and not at.selectbox and not at.multiselect
    assert len(at.sidebar) == 0  # no pickers, no share link, no sign-out (and the menu is hidden)
    assert not store_opened  # no page ran: the store was never opened


def _sign_in(at: AppTest, password: str) -> AppTest:
    at.text_input[0].input(password)
    return at.button[0].click().run()


# --- no configuration ---------------------------------------------------------------------


def test_without_configuration_the_app_opens_directly(store_opened: list[int]) -> None:
    at = open_app()
    assert not at.exception
    assert at.title[0].value == "Overview"
    assert not at.text_input and store_opened
    assert not [b for b in at.button if b.label == "Sign out"]


def test_auth_none_turns_a_configured_password_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETRICS_PASSWORD", PASSWORD)
    monkeypatch.setenv("RAGMETRICS_AUTH", "none")
    assert open_app().title[0].value == "Overview"


# --- shared password ----------------------------------------------------------------------


def test_a_password_locks_every_page_until_signed_in(monkeypatch: pytest.MonkeyPatch, store_opened: list[int]) -> None:
    monkeypatch.setenv("RAGMETRICS_PASSWORD", PASSWORD)
    at = open_app()
    _assert_locked(at, store_opened)
    assert [t.label for t in at.text_input] == ["Password"]
    assert [b.label for b in at.button] == ["Sign in"]

    at = _sign_in(at, "wrong")
    _assert_locked(at, store_opened)
    assert [e.value for e in at.error] == ["Wrong password."]

    at = _sign_in(at, PASSWORD)
    assert not at.exception and not at.error
    assert at.title[0].value == "Overview"
    assert at.table and store_opened  # the page drew its tables from the store
    assert not at.text_input or "Password" not in [t.label for t in at.text_input]
    assert not any(PASSWORD in text for text in _texts(at))
    assert PASSWORD not in repr(at.session_state.to_dict())
    inner = at.session_state._state._state  # Streamlit's SessionState: the form's widget value is gone too
    assert PASSWORD not in repr([getattr(inner, s) for s in ("_old_state", "_new_session_state", "_new_widget_state")])

    # the session stays signed in across reruns and page switches
    at.switch_page("views/missed.py").run()
    assert at.title[0].value == "Missed queries"

    at.button(key="auth.sign_out").click().run()
    assert [t.value for t in at.title] == ["ragmetrics"] and [t.label for t in at.text_input] == ["Password"]
    assert not figure_specs(at) and len(at.sidebar) == 0


def test_a_share_link_opens_its_page_and_view_after_sign_in(
    monkeypatch: pytest.MonkeyPatch, store_opened: list[int]
) -> None:
    from dashboard.data.samples import iter_samples
    from ragmetrics.store.database import dataset_id, run_id

    sample = next(iter_samples(names=["product_faq_zh"]))
    runs = {run.name: run_id(run) for run, _ in sample.runs}
    link = {"v": "1", "ds": dataset_id(sample.dataset), "runs": runs["bm25"], "k": "5", "q": "q009"}
    monkeypatch.setenv("RAGMETRICS_PASSWORD", PASSWORD)
    at = open_app()  # registers the pages (the menu stays hidden)
    at.switch_page("views/missed.py")  # the share link's page path ...
    for key, value in link.items():  # ... and its query
        at.query_params[key] = value
    at.run()
    _assert_locked(at, store_opened)
    assert {k: param(at, k) for k in link} == link  # the gate leaves the address alone

    at = _sign_in(at, PASSWORD)
    assert not at.exception and not at.error
    assert at.title[0].value == "Missed queries"
    assert at.multiselect(key="sidebar.runs").value == [runs["bm25"]]
    assert at.number_input(key="sidebar.k").value == 5
    assert at.selectbox(key="missed.query").value == "q009"
    assert param(at, "q") == "q009" and param(at, "ds") == link["ds"]


def test_a_hashed_password_works_and_the_clear_text_is_not_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETRICS_PASSWORD_HASH", signin_config.hash_password(PASSWORD, iterations=1_000))
    at = _sign_in(open_app(), PASSWORD.upper())
    assert [e.value for e in at.error] == ["Wrong password."]
    at = _sign_in(at, PASSWORD)
    assert at.title[0].value == "Overview"


def test_a_sha256_hex_password_hash_works(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETRICS_PASSWORD_HASH", hashlib.sha256(PASSWORD.encode()).hexdigest().upper())
    assert _sign_in(open_app(), PASSWORD).title[0].value == "Overview"


def test_the_password_in_secrets_toml_and_the_environment_wins(secrets_toml, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets_toml('[ragmetrics]\npassword = "from-secrets"\n')
    at = open_app()
    assert [t.label for t in at.text_input] == ["Password"]
    assert _sign_in(at, "from-secrets").title[0].value == "Overview"

    monkeypatch.setenv("RAGMETRICS_PASSWORD", "from-env")  # the environment wins over secrets.toml
    at = _sign_in(open_app(), "from-secrets")
    assert [e.value for e in at.error] == ["Wrong password."]
    assert _sign_in(at, "from-env").title[0].value == "Overview"


def test_a_hash_in_secrets_toml(secrets_toml) -> None:
    secrets_toml(f'[ragmetrics]\npassword_hash = "{signin_config.hash_password(PASSWORD, iterations=1_000)}"\n')
    assert _sign_in(open_app(), PASSWORD).title[0].value == "Overview"


def test_too_many_wrong_passwords_pause_the_form(monkeypatch: pytest.MonkeyPatch, store_opened: list[int]) -> None:
    now = [1000.0]
    monkeypatch.setattr(auth, "clock", lambda: now[0])
    monkeypatch.setenv("RAGMETRICS_PASSWORD", PASSWORD)
    at = open_app()
    for _ in range(auth.MAX_FAILURES - 1):
        at = _sign_in(at, "nope")
        assert [e.value for e in at.error] == ["Wrong password."]
    at = _sign_in(at, "nope")
    assert "Too many tries" in at.error[0].value
    at = _sign_in(at, PASSWORD)  # even the right password waits
    assert at.error[0].value.startswith("Too many wrong passwords. Try again in 30 s")
    _assert_locked(at, store_opened)
    now[0] += auth.LOCKOUT_SECONDS + 0.5
    assert _sign_in(at, PASSWORD).title[0].value == "Overview"


def test_changing_the_password_signs_sessions_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETRICS_PASSWORD", PASSWORD)
    at = _sign_in(open_app(), PASSWORD)
    assert at.title[0].value == "Overview"
    monkeypatch.setenv("RAGMETRICS_PASSWORD", "a new one")
    at.run()
    assert [t.value for t in at.title] == ["ragmetrics"] and [t.label for t in at.text_input] == ["Password"]


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"RAGMETRICS_AUTH": "password"}, "no password is set"),
        ({"RAGMETRICS_AUTH": "ldap", "RAGMETRICS_PASSWORD": PASSWORD}, "'ldap': use password, oidc or none"),
        ({"RAGMETRICS_PASSWORD_HASH": "md5$abc"}, "is not usable"),
        ({"RAGMETRICS_PASSWORD_HASH": "pbkdf2_sha256$x$salt$AAAA"}, "is not usable"),
    ],
    ids=["no-password", "unknown-mode", "unknown-hash", "bad-pbkdf2"],
)
def test_a_broken_configuration_stays_locked(
    monkeypatch: pytest.MonkeyPatch, store_opened: list[int], env: dict, says: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    at = open_app()
    _assert_locked(at, store_opened)
    assert len(at.error) == 1 and says in at.error[0].value and "stays locked" in at.error[0].value
    assert not at.text_input and not at.button


# --- OIDC (Streamlit's st.login) ----------------------------------------------------------


@pytest.fixture
def oidc(secrets_toml, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets_toml('[ragmetrics]\nauth = "oidc"\n' + AUTH_TABLE)


def test_oidc_shows_only_a_sign_in_button_until_logged_in(
    oidc, monkeypatch: pytest.MonkeyPatch, store_opened: list[int]
) -> None:
    monkeypatch.setattr(signin_config, "missing_oidc_packages", list)  # the gate's check; st.login checks for itself
    at = open_app(user={"is_logged_in": False}, params={"v": "1", "k": "8"})
    _assert_locked(at, store_opened)
    assert [b.label for b in at.button] == ["Sign in"] and not at.text_input and not at.error
    assert param(at, "k") == "8"
    assert any("open the link you were given again" in c.value for c in at.caption)  # st.login returns to "/"

    at.button(key="auth.login").click().run()  # st.login: with Authlib, a redirect to /auth/login; without, an error
    _assert_locked(at, store_opened)
    if OIDC_PACKAGES:
        assert not at.error
    else:
        assert len(at.error) == 1 and "Authlib" in at.error[0].value


def test_oidc_logged_in_user_sees_the_dashboard_and_can_sign_out(
    oidc, monkeypatch: pytest.MonkeyPatch, store_opened: list[int]
) -> None:
    monkeypatch.setattr(signin_config, "missing_oidc_packages", list)
    _oidc_signed_in(
        open_app(user={"is_logged_in": True, "name": "Ada Lovelace", "email": "ada@example.com"}), store_opened
    )


@pytest.mark.parametrize(
    ("allow", "user", "enters"),
    [
        ('auth_allow = ["@Example.com"]', {"email": "Ada@example.com"}, True),
        ('auth_allow = "bob@other.org, ada@example.com"', {"email": "ada@example.com"}, True),
        ('auth_allow = "bob@other.org, @other.org"', {"email": "ada@example.com"}, False),
        ('auth_allow = "@example.com"', {"email": "ada@example.com", "email_verified": False}, False),
        ('auth_allow = "@example.com"', {"email": "ada@example.com.evil.org"}, False),
        ('auth_allow = "@example.com"', {}, False),  # no address at all
    ],
    ids=["domain", "address", "other-domain", "unverified", "suffix-trick", "no-email"],
)
def test_oidc_allow_list(
    secrets_toml, monkeypatch: pytest.MonkeyPatch, store_opened: list[int], allow: str, user: dict, enters: bool
) -> None:
    monkeypatch.setattr(signin_config, "missing_oidc_packages", list)
    secrets_toml(f'[ragmetrics]\nauth = "oidc"\n{allow}\n' + AUTH_TABLE)
    at = open_app(user={"is_logged_in": True, "name": "Ada", **user})
    assert not at.exception
    if enters:
        assert at.title[0].value == "Overview" and store_opened
        return
    _assert_locked(at, store_opened)
    assert "may not open this dashboard" in at.error[0].value
    at.button(key="auth.sign_out").click().run()  # the way out: another account
    assert at.user.get("is_logged_in") is False


def test_oidc_allow_list_from_the_environment_wins(
    oidc, monkeypatch: pytest.MonkeyPatch, store_opened: list[int]
) -> None:
    monkeypatch.setattr(signin_config, "missing_oidc_packages", list)
    monkeypatch.setenv("RAGMETRICS_AUTH_ALLOW", "@other.org")
    at = open_app(user={"is_logged_in": True, "email": "ada@example.com"})
    _assert_locked(at, store_opened)
    assert at.error[0].value.startswith("ada@example")


def test_oidc_without_its_packages_stays_locked(oidc, monkeypatch: pytest.MonkeyPatch, store_opened: list[int]) -> None:
    monkeypatch.setattr(signin_config, "missing_oidc_packages", lambda: ["Authlib", "httpx"])
    at = open_app(user={"is_logged_in": True, "name": "Ada Lovelace"})
    _assert_locked(at, store_opened)
    assert "needs Authlib and httpx" in at.error[0].value and "ragmetrics[dashboard,auth]" in at.error[0].value
    assert not at.button


def _oidc_signed_in(at: AppTest, store_opened: list[int]) -> None:
    assert not at.exception and not at.error
    assert at.title[0].value == "Overview" and store_opened
    assert "Signed in as Ada Lovelace" in [c.value for c in at.sidebar.caption]
    at.button(key="auth.sign_out").click().run()  # st.logout(): the browser is sent away, the run draws nothing more
    assert not at.exception and not at.title and not figure_specs(at)
    assert at.user.get("is_logged_in") is False  # st.user is emptied for the rest of the session
    at.run()
    assert [t.value for t in at.title] == ["ragmetrics"] and [b.label for b in at.button] == ["Sign in"]


def test_oidc_without_an_auth_table_stays_locked(
    secrets_toml, monkeypatch: pytest.MonkeyPatch, store_opened: list[int]
) -> None:
    secrets_toml('[ragmetrics]\nstore_url = ""\n')
    monkeypatch.setenv("RAGMETRICS_AUTH", "oidc")
    at = open_app(user={"is_logged_in": True})  # even a (forged) logged-in user: OIDC is not configured
    _assert_locked(at, store_opened)
    assert "no [auth] table" in at.error[0].value and not at.button


# --- hashes ---------------------------------------------------------------------------------


def test_hash_password_round_trip_and_format() -> None:
    stored = signin_config.hash_password("pässwörd", iterations=1_000, salt="fixed")
    assert stored.startswith("pbkdf2_sha256$1000$fixed$")
    check = signin_config.hash_checker(stored)
    assert check("pässwörd") and not check("passwort") and not check("")
    assert signin_config.hash_password("x", iterations=1_000) != signin_config.hash_password(
        "x", iterations=1_000
    )  # salted
    assert signin_config.hash_password("x").split("$")[1] == str(signin_config.PBKDF2_ITERATIONS)
    hexed = signin_config.hash_checker("sha256:" + hashlib.sha256(b"x").hexdigest())
    assert hexed("x") and not hexed("y")
    for bad in ("", "plain", "pbkdf2_sha256$1000$salt", "pbkdf2_sha256$0$salt$" + "A" * 44, "ab" * 31):
        with pytest.raises(ValueError):
            signin_config.hash_checker(bad)


def test_the_hash_helper_prints_a_usable_hash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("getpass.getpass", lambda prompt="": PASSWORD)
    auth._main()  # python -m dashboard.ui.auth
    printed = capsys.readouterr().out.strip()
    assert printed.startswith("pbkdf2_sha256$") and PASSWORD not in printed
    assert signin_config.hash_checker(printed)(PASSWORD)
    answers = iter(["one", "two"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    with pytest.raises(SystemExit):
        auth._main()


def test_the_hash_helper_says_when_the_input_ends_before_the_second_password(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``printf 'secret\\n' | python -m dashboard.ui.auth`` (one line where it asks twice) ends with one line. Was:
    getpass's EOFError as a traceback."""
    answers = iter([PASSWORD])

    def getpass(prompt: str = "") -> str:
        for answer in answers:
            return answer
        raise EOFError

    monkeypatch.setattr("getpass.getpass", getpass)
    with pytest.raises(SystemExit) as stopped:
        auth._main()
    assert stopped.value.code == "No password read: the input ended before the password was given twice."
    assert capsys.readouterr().out == ""


# --- who gives a label ----------------------------------------------------------------------


def _judge_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A store of its own holding the Judge page's small dataset; returns its URL and the dataset id."""
    from dashboard.data.workspace import Workspace
    from ragmetrics.store.database import Store
    from tests.dashboard.test_judge_apptest import judge_dataset

    folder = tmp_path / "judge-store"
    folder.mkdir()
    monkeypatch.setenv("RAGMETRICS_DATA_DIR", str(folder))
    monkeypatch.setenv("RAGMETRICS_SAMPLES", "off")
    url = f"sqlite:///{folder / 'ragmetrics.sqlite'}"
    ws = Workspace(Store(url))
    dataset, runs = judge_dataset()
    entry = ws.add_dataset(dataset)
    for run in runs:
        ws.add_run(entry.id, run)
    ws.store.engine.dispose()
    return url, entry.id


def _label_on_the_judge_page(at: AppTest, url: str, dataset: str) -> list[str]:
    from ragmetrics.store.database import Store

    at.switch_page("views/judge.py").run()
    assert not at.exception and at.title[0].value == "Judge"
    from tests.dashboard.test_judge_apptest import button

    button(at, "judge.grade.1").click().run()
    assert not at.exception
    return Store(url).pending_labels(dataset)["author"].tolist()


def test_an_oidc_users_labels_carry_their_address(
    oidc, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, store_opened: list[int]
) -> None:
    monkeypatch.setattr(signin_config, "missing_oidc_packages", list)
    url, dataset = _judge_store(tmp_path, monkeypatch)
    at = open_app(user={"is_logged_in": True, "name": "Ada Lovelace", "email": "ada@example.com"})
    assert _label_on_the_judge_page(at, url, dataset) == ["ada@example.com"]


def test_a_shared_password_names_no_one_so_labels_are_anonymous(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAGMETRICS_PASSWORD", PASSWORD)
    url, dataset = _judge_store(tmp_path, monkeypatch)
    at = _sign_in(open_app(), PASSWORD)
    assert _label_on_the_judge_page(at, url, dataset) == ["anonymous"]


def test_an_oidc_users_review_decisions_carry_their_address(
    oidc, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, store_opened: list[int]
) -> None:
    from ragmetrics.store.candidates import CandidateStore
    from ragmetrics.store.database import Store

    monkeypatch.setattr(signin_config, "missing_oidc_packages", list)
    url, dataset = _judge_store(tmp_path, monkeypatch)
    candidates = CandidateStore(Store(url))
    batch = candidates.new_batch(dataset, "extractive", {"seed": 0}, 1)
    record = {"query_id": "extractive-0-0001", "query": "How long do refunds take?", "relevant_docs": {"d5": 2},
              "category": "factual", "difficulty": "easy", "source": {"doc_id": "d5", "text": "Refunds take 14 days."}}  # fmt: skip
    candidates.add_candidate(batch, 1, record)
    candidates.set_status(batch, "complete")
    at = open_app(user={"is_logged_in": True, "name": "Ada Lovelace", "email": "ada@example.com"})
    at.switch_page("views/build.py").run()
    assert not at.exception and at.title[0].value == "Build dataset"
    next(b for b in at.button if b.key == "build.accept.1").click().run()
    assert not at.exception
    decided = CandidateStore(Store(url)).candidates(batch)[0]
    assert (decided.decision, decided.reviewer) == ("accepted", "ada@example.com")
