"""Credentials screening: fake keys in every supported format are found and masked, and
look-alikes (prose, hashes, UUIDs, short base64) pass untouched."""

from __future__ import annotations

import base64
import hashlib

import pytest

from active_memory.credentials import find_secrets, mask, screen, shannon_entropy

# Built from pieces so that no literal in this file has a real key's full shape.
_ALNUM = "Ab3De5Gh7Jk9Mn2Pq4St6Vw8Yz0Cf1Hj"
FAKE_KEYS: dict[str, str] = {
    "anthropic": "sk-" + "ant-api03-" + _ALNUM + "-xY_" + _ALNUM[:12],
    "openai-legacy": "sk-" + _ALNUM + "T3BlbkFJ" + _ALNUM[:12],
    "openai-project": "sk-" + "proj-" + _ALNUM + "_" + _ALNUM + "-A1",
    "github-classic": "ghp" + "_" + _ALNUM + "Qr4t",
    "github-fine-grained": "github" + "_pat_" + "11ABCDEFG0" + _ALNUM + "_" + _ALNUM,
    "aws": "AKIA" + "IOSFODNN7EXAMPLE",
    "slack-bot": "xoxb" + "-2401234567-2398765432-" + _ALNUM[:24],
    "slack-user": "xoxp" + "-2401234567-2398765432-" + _ALNUM[:24],
    "google": "AIza" + "SyD" + _ALNUM,
    "stripe-secret": "sk_" + "live_" + _ALNUM[:24],
    "stripe-restricted": "rk_" + "live_" + _ALNUM[:24],
}

CREDENTIAL_TEXTS = [
    *(f"Export the key {key} before running the tests." for key in FAKE_KEYS.values()),
    "curl -H 'Authorization: Bearer " + "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjQ2fQ.c2lnbmF0dXJl' …",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7d\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN " + "PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----",
    "Connect with postgresql://deploy:" + "Tr0ub4dor3@db.internal:5432/app",
    "Set API_TOKEN=" + "9f8a7b6c5d4e3f2a1b0c in .env",
    "the config has password: " + "'Zx81!qLm#4vR0pWt'",
    'client_secret = "' + "a8F3kQ9zX2mB7nV4" + '"',
]

LOOK_ALIKES = [
    "Use sk-learn's estimators; the sk- prefix here is a package name.",
    "The risk-based checker (task-specific) refuses a sketch-like answer.",
    "See .cache/" + hashlib.sha256(b"commit").hexdigest() + "/build.log for the trace.",
    "Commit " + hashlib.sha1(b"x").hexdigest() + " fixed the migration.",
    "The TAKIAWA module and AKIAKIA are words, not keys.",
    "Run IDs look like 123e4567-e89b-12d3-a456-426614174000 in the ledger.",
    "The fixture encodes " + base64.b64encode(b"hello").decode() + " as the payload.",
    "Pass TOKEN=${GITHUB_TOKEN} from the environment, never a literal.",
    "password: <your password>",
    "postgresql://deploy@db.internal:5432/app has no password in the URL.",
    "postgresql://deploy:${PGPASSWORD}@db.internal/app reads it from the environment.",
    "token_limit=4096 and max_tokens: 8192 are budgets, not credentials.",
    "SECRET_KEY=changemechangeme is the documented development default.",
    "The bearer token is read from AUTH_HEADER; never log the Bearer header.",
    "Call api.example.com with the key from the vault (AIza prefix keys are Google's).",
    "The xoxb- prefix marks Slack bot tokens; ghp_ marks GitHub ones.",
]


@pytest.mark.parametrize("text", CREDENTIAL_TEXTS)
def test_every_credential_format_is_found(text: str) -> None:
    assert find_secrets(text), text


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []
    assert mask(text) == text


@pytest.mark.parametrize("name", sorted(FAKE_KEYS))
def test_a_masked_text_keeps_no_part_of_the_key(name: str) -> None:
    key = FAKE_KEYS[name]
    masked = mask(f"before {key} after")
    assert masked.startswith("before [REDACTED:") and masked.endswith("] after")
    assert key[6:] not in masked


def test_an_anthropic_key_is_named_anthropic_not_openai() -> None:
    [match] = find_secrets(FAKE_KEYS["anthropic"])
    assert match.kind == "anthropic-key"


def test_a_url_password_is_masked_but_user_and_host_remain() -> None:
    text = "postgresql://deploy:" + "Tr0ub4dor3@db.internal/app"
    assert mask(text) == "postgresql://deploy:[REDACTED:url-password]@db.internal/app"


def test_a_findings_excerpt_is_masked_and_names_its_field() -> None:
    key = FAKE_KEYS["github-classic"]
    text = f"A recommendation that mentions, in the middle of it, {key} and on and on for a while."
    [finding] = screen({"recommendation": text})
    assert finding.field == "recommendation" and finding.kind == "github-token"
    assert key not in finding.excerpt and "[REDACTED:github-token]" in finding.excerpt
    assert finding.excerpt.startswith("…") and finding.excerpt.endswith("…")


def test_two_secrets_near_each_other_are_both_masked_in_each_excerpt() -> None:
    first, second = FAKE_KEYS["aws"], FAKE_KEYS["stripe-secret"]
    findings = screen([("title", f"{first} {second}")])
    assert [f.kind for f in findings] == ["aws-access-key", "stripe-key"]
    for finding in findings:
        assert first not in finding.excerpt and second not in finding.excerpt


def test_entropy_separates_random_values_from_words() -> None:
    assert shannon_entropy("") == 0.0
    assert shannon_entropy("aaaaaaaaaaaa") == 0.0
    assert shannon_entropy("changemechangeme") < 3.0
    assert shannon_entropy("9f8a7b6c5d4e3f2a1b0c") >= 3.0
