"""The screen's provider formats are ours (issue 31): no scanner library at run time or
when the table is generated, a real example of every rule in the corpus, and the shapes
the formerly borrowed rules are now held to."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from active_memory import credential_gate
from active_memory.credential_formats import PROVIDER_FORMATS
from active_memory.credentials import all_rules, find_secrets, mask

PACKAGE = Path(__file__).parents[1] / "active_memory"
CORPUS = json.loads(
    (Path(__file__).parent / "fixtures" / "secrets" / "corpus.json").read_text(encoding="utf-8")
)
SECRETS: list[str] = [entry["text"] for entry in CORPUS["secrets"]]


def _example(kind: str, holding: str, documented: str = "") -> str:
    """The corpus's real-format example of `kind` whose text holds `holding` (and whose
    note of where it is documented holds `documented`)."""
    return next(
        str(e["text"])
        for e in CORPUS["secrets"]
        if e["kind"] == kind and holding in e["text"] and documented in e.get("documented", "")
    )


def test_no_module_of_the_package_names_detect_secrets() -> None:
    named = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "detect_secrets" in path.read_text(encoding="utf-8")
    ]
    assert named == []


def test_the_screen_and_its_generator_load_no_scanner_library() -> None:
    script = (
        "import sys\n"
        "from active_memory import credential_gate, credentials\n"
        "credential_gate.render()\n"
        "credentials.mask('key AKIAIOSFODNN7EXAMPLE and eyJhbGciOiJub25lIn0.eyJzdWIiOjF9.')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'detect_secrets'))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_every_provider_rule_finds_a_real_example_in_the_corpus() -> None:
    unmatched = [
        f"{kind}: {pattern.pattern[:50]}"
        for kind, pattern, _group in all_rules()
        if not any(pattern.search(text) for text in SECRETS)
    ]
    assert unmatched == []


def test_every_new_corpus_example_says_where_its_format_is_documented() -> None:
    # The formats written for issue 31 from the providers' public descriptions.
    kinds = {"azure-storage-key", "discord-token", "jwt", "mailchimp-key", "pypi-token"}
    kinds |= {"sendgrid-key", "square-secret", "telegram-token", "twilio-key", "slack-webhook"}
    kinds |= {"aws-secret-key"}
    entries = CORPUS["secrets"]
    undocumented = [e["kind"] for e in entries if e["kind"] in kinds and not e.get("documented")]
    assert undocumented == []
    assert kinds <= {kind for kind, _source, _flags, _group in PROVIDER_FORMATS}


def test_an_azure_key_is_masked_and_the_connection_strings_names_stay() -> None:
    text = _example("azure-storage-key", "AccountKey=")
    masked = mask(text)
    assert "AccountKey=[REDACTED:azure-storage-key];" in masked
    assert masked.startswith("DefaultEndpointsProtocol=https;AccountName=x;")


def test_a_putty_key_file_is_masked_to_its_mac_line_and_what_follows_stays() -> None:
    text = _example("private-key", "PuTTY-User-Key-File-3") + "\nthen run pageant"
    assert mask(text) == "[REDACTED:private-key]\nthen run pageant"


def test_a_pgp_private_key_block_is_masked_whole() -> None:
    text = "key:\n" + _example("private-key", "PGP PRIVATE KEY BLOCK") + "\nend"
    assert mask(text) == "key:\n[REDACTED:private-key]\nend"


def test_a_discord_token_needs_a_user_id_in_base64_not_any_dotted_name() -> None:
    token = _example("discord-token", "Bot ").removeprefix("Authorization: Bot ")
    assert mask(f"token {token} leaked") == "token [REDACTED:discord-token] leaked"
    # Same part lengths, with a digit: a dotted name, not a base64 decimal ID.
    name = "NetworkRequestSerializer.client.handle_response_with_retries_v2"
    assert [len(part) for part in name.split(".")][:2] == [len(p) for p in token.split(".")][:2]
    assert find_secrets(name) == []


def test_an_aws_secret_key_is_found_where_an_aws_name_precedes_it() -> None:
    text = _example("aws-secret-key", "configure set")
    value = text.rsplit(" ", 1)[1]
    assert mask(text) == "aws configure set aws_secret_access_key [REDACTED:aws-secret-key]"
    assert find_secrets(f"the value {value} alone") == []
    assert find_secrets(f"draws_key {value}") == []


def test_a_telegram_token_in_a_bot_api_url_is_masked_and_the_method_stays() -> None:
    text = _example("telegram-token", "api.telegram.org")
    assert mask(text) == "curl https://api.telegram.org/bot[REDACTED:telegram-token]/getMe"


def test_a_uuid_is_an_npm_token_only_where_npmrc_names_it() -> None:
    text = _example("npm-token", ":_authToken=", documented="UUIDs")
    uuid = text.rsplit("=", 1)[1]
    assert mask(text) == "//registry.npmjs.org/:_authToken=[REDACTED:npm-token]"
    assert find_secrets(f"run {uuid} failed") == []


_NOISE = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.sampled_from(SECRETS), _NOISE, _NOISE)
def test_the_gate_never_says_no_for_a_text_the_screen_finds_a_secret_in(
    secret: str, before: str, after: str
) -> None:
    text = before + secret + after
    if find_secrets(text):
        assert credential_gate.may_hold_secret(text)
