"""The provider formats the credential screen knows, as regex sources (docs/security.md).

`credentials.py` compiles a rule only when a text holds the rule's literal prefix: a hook
process that masks one key path compiles the one or two rules that may match it, not the
sixty the screen has. The formats are `(kind, source, flags, group)`: `group` is the
span that is secret (0 = the whole match). `detect-secrets`' own rules are read from the
library only to generate `credential_rules.DETECT_SECRETS` (`python -m
active_memory.credential_gate --write`).
"""

from __future__ import annotations

import re

_KEYCHARS = r"[A-Za-z0-9_\-]"
_HAS_DIGIT_AND_LETTER = r"(?=[A-Za-z0-9_\-]*[0-9])(?=[A-Za-z0-9_\-]*[A-Za-z])"

OURS: tuple[tuple[str, str, int, int], ...] = (
    (
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
        r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|.*\Z)",
        re.DOTALL,
        0,
    ),
    ("anthropic-key", rf"\bsk-ant-{_KEYCHARS}{{20,}}", 0, 0),
    (
        "openai-key",
        rf"\bsk-(?:proj-|svcacct-|admin-)?{_HAS_DIGIT_AND_LETTER}{_KEYCHARS}{{20,}}",
        0,
        0,
    ),
    ("github-token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b", 0, 0),
    ("github-token", r"\bgithub_pat_[A-Za-z0-9_]{22,}", 0, 0),
    ("aws-access-key", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", 0, 0),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", 0, 0),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}", 0, 0),
    ("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", 0, 0),
    (
        "bearer-token",
        r"\b[Bb]earer\s+((?=[A-Za-z0-9._~+/\-]*[0-9])[A-Za-z0-9._~+/\-]{20,}=*)",
        0,
        1,
    ),
    # scheme://user:password@host; the password only.
    ("url-password", r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:([^\s/@]+)@", 0, 1),
    # Formats `detect-secrets` does not know, or knows only in one file's syntax.
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", 0, 0),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{34,}\b", 0, 0),
    ("google-oauth-token", r"\bya29\.[0-9A-Za-z_\-]{20,}", 0, 0),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{20,}", 0, 0),
    ("digitalocean-token", r"\bdo[opr]_v1_[a-f0-9]{64}\b", 0, 0),
    ("shopify-token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", 0, 0),
    ("linear-key", r"\blin_api_[A-Za-z0-9]{40}\b", 0, 0),
    ("databricks-token", r"\bdapi[a-f0-9]{32}\b", 0, 0),
    ("postman-key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b", 0, 0),
    ("doppler-token", r"\bdp\.(?:pt|st|ct|sa)\.[A-Za-z0-9]{40,}", 0, 0),
    ("age-secret-key", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b", 0, 0),
)
"""Our provider formats, most specific first; they are tried before detect-secrets'."""

# `detect-secrets` regex plugins used as they are (their `denylist`), by secret type.
# Left out on the bench's look-alike corpus: the public-IP rule (an address is not a
# credential) and Artifactory (its `AP…` pattern matches ordinary identifiers).
DETECT_SECRETS_PLUGINS = (
    ("aws", "AWSKeyDetector", "aws-key"),
    ("azure_storage_key", "AzureStorageKeyDetector", "azure-storage-key"),
    ("basic_auth", "BasicAuthDetector", "url-password"),
    ("discord", "DiscordBotTokenDetector", "discord-token"),
    ("github_token", "GitHubTokenDetector", "github-token"),
    ("gitlab_token", "GitLabTokenDetector", "gitlab-token"),
    ("jwt", "JwtTokenDetector", "jwt"),
    ("mailchimp", "MailchimpDetector", "mailchimp-key"),
    ("npm", "NpmDetector", "npm-token"),
    ("openai", "OpenAIDetector", "openai-key"),
    ("private_key", "PrivateKeyDetector", "private-key"),
    ("pypi_token", "PypiTokenDetector", "pypi-token"),
    ("sendgrid", "SendGridDetector", "sendgrid-key"),
    ("slack", "SlackDetector", "slack-token"),
    ("square_oauth", "SquareOAuthDetector", "square-secret"),
    ("stripe", "StripeDetector", "stripe-key"),
    ("telegram_token", "TelegramBotTokenDetector", "telegram-token"),
    ("twilio", "TwilioKeyDetector", "twilio-key"),
)


def detect_secrets_rules() -> tuple[tuple[str, str, int, int], ...]:
    """The denylists of `DETECT_SECRETS_PLUGINS` as (kind, pattern, flags, group), read
    from the installed library: what `credential_rules.DETECT_SECRETS` is generated from
    (the screen itself never imports the library: 130 ms at start-up)."""
    import importlib

    rules: list[tuple[str, str, int, int]] = []
    for module, name, kind in DETECT_SECRETS_PLUGINS:
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
        for pattern in plugin.denylist:
            # A pattern whose group is the secret masks the group; the rest the match.
            flags = pattern.flags & ~re.UNICODE
            rules.append((kind, pattern.pattern, flags, 1 if pattern.groups else 0))
    return tuple(rules)
