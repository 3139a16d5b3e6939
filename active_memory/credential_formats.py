"""The provider formats the credential screen knows, as regex sources (docs/security.md).

Every rule is ours, written from the provider's own public description of its key format
(named beside each rule; `tests/fixtures/secrets/corpus.json` holds a synthetic example
of each). A format is `(kind, source, flags, group)`: `group` is the span that is secret
(0 = the whole match). Flags are given here, never inline: `credential_gate` reads them
to know whether a rule folds case (a test holds it).

`credentials.py` compiles a rule only when a text holds the rule's literal prefix: a
hook process that masks one key path compiles the few rules that may match it, not all
of them. Where a format has a distinctive prefix (`glpat-`, `sq0csp-`) the length after
it is a floor, so that a provider lengthening its keys is still found; a format with no
prefix, or a short one (Discord, Telegram, Mailchimp, Twilio, SendGrid), is held to its
exact shape and bounded on both sides, since a looser shape takes ordinary text for a key.
"""

from __future__ import annotations

import re

_KEYCHARS = r"[A-Za-z0-9_\-]"  # base64url: most tokens' alphabet
_END = r"(?![A-Za-z0-9_\-])"  # the key ends here, not inside a longer run
_HAS_DIGIT_AND_LETTER = r"(?=[A-Za-z0-9_\-]*[0-9])(?=[A-Za-z0-9_\-]*[A-Za-z])"
_HEX = "[0-9a-f]"
_DIGITS_B64 = "(?:[MNO][DTjz][AEIMQUYcgk][w-z0-5])"  # 3 ASCII digits in base64
_UUID = "[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}"

PROVIDER_FORMATS: tuple[tuple[str, str, int, int], ...] = (
    # PEM and OpenSSH private keys (RFC 7468), OpenPGP's armored `PRIVATE KEY BLOCK`
    # (RFC 4880 §6.2): the whole key, to its END line or to the end of the text.
    (
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
        re.DOTALL,
        0,
    ),
    # SSH Communications' (Tectia) private key files, in RFC 4716's `---- BEGIN` framing.
    (
        "private-key",
        r"---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----"
        r"(?:.*?---- END SSH2 ENCRYPTED PRIVATE KEY ----|.*\Z)",
        re.DOTALL,
        0,
    ),
    # PuTTY's key files (PuTTY manual, appendix C "PPK file format"): from the header
    # line (`PuTTY-User-Key-File-2: ssh-rsa`, `-3` since 0.75) to the MAC line.
    (
        "private-key",
        r"PuTTY-User-Key-File-[0-9]+: .*?(?:Private-MAC: [0-9a-fA-F]+|\Z)",
        re.DOTALL,
        0,
    ),
    # Anthropic console keys: `sk-ant-` (`sk-ant-api03-…`, `sk-ant-admin01-…`).
    ("anthropic-key", rf"\bsk-ant-{_KEYCHARS}{{20,}}", 0, 0),
    # OpenAI keys: `sk-`, `sk-proj-`, `sk-svcacct-`, `sk-admin-` (platform docs, API keys).
    (
        "openai-key",
        rf"\bsk-(?:proj-|svcacct-|admin-)?{_HAS_DIGIT_AND_LETTER}{_KEYCHARS}{{20,}}",
        0,
        0,
    ),
    # GitHub (docs, "About authentication to GitHub": token formats): `ghp_` personal,
    # `gho_` OAuth, `ghu_` user-to-server, `ghs_` server-to-server, `ghr_` refresh;
    # fine-grained personal tokens `github_pat_`.
    ("github-token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b", 0, 0),
    ("github-token", r"\bgithub_pat_[A-Za-z0-9_]{22,}", 0, 0),
    # GitLab (docs, "GitLab token overview", token prefixes): personal, project and group
    # access tokens, OAuth application secrets, deploy, runner authentication, CI/CD job,
    # pipeline trigger, feed, incoming mail, agent for Kubernetes, SCIM and feature flag
    # client tokens.
    (
        "gitlab-token",
        r"\b(?:glpat|gloas|gldt|glrt|glrtr|glcbt|glptt|glft|glimt|glagent|glsoat|glffct)-"
        rf"{_KEYCHARS}{{20,}}",
        0,
        0,
    ),
    # The deprecated runner registration tokens: `GR1348941` and the token.
    ("gitlab-token", rf"\bGR1348941{_KEYCHARS}{{20,}}", 0, 0),
    # AWS access key IDs, by the IAM unique-ID prefixes of credentials (IAM user guide,
    # "Unique identifiers"): AKIA long-term, ASIA temporary (STS), ABIA STS service
    # bearer token, ACCA context-specific credential; 20 characters in all.
    ("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", 0, 0),
    # `A3T` and a character: older key IDs that secret scanners report; AWS does not
    # document this prefix.
    ("aws-access-key", r"\bA3T[A-Z0-9]{17}\b", 0, 0),
    # The secret access key (IAM user guide, "Manage access keys": 40 base64 characters,
    # `wJalrXUtnFEMI/K7MDENG/…`): its shape alone is any base64, so it must be named by
    # an `aws…key`/`secret`/`password` word first (not `draws`, not a path: it mixes
    # digits with both cases and does not start with `/`).
    (
        "aws-secret-key",
        r"aws(?<![A-Za-z]aws)[A-Za-z0-9_.\-]{0,20}?(?:secret|key|pass|pwd|pw)"
        r"[A-Za-z0-9_.\-]{0,20}?[\"']?(?:\s*[:=]{1,2}\s*|\s+)[\"']?"
        r"((?=[A-Za-z0-9/+]*[0-9])(?-i:(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[a-z]))"
        r"[A-Za-z0-9+][A-Za-z0-9/+]{39})(?![A-Za-z0-9/+=])",
        re.IGNORECASE,
        1,
    ),
    # Azure storage account keys in a connection string (Azure Storage docs, "Configure
    # a connection string": `AccountKey=`): a 512-bit key in base64, 88 characters; the
    # key only, `AccountKey=` stays readable.
    ("azure-storage-key", r"AccountKey=([A-Za-z0-9+/]{86}==)", 0, 1),
    # Slack: tokens `xoxb-` (bot), `xoxp-` (user), `xoxa-`, `xoxo-`, `xoxs-`, `xoxr-`
    # (Slack API docs, "Token types"); incoming and workflow webhook URLs, whose path is
    # the secret (Slack API docs, "Sending messages using incoming webhooks").
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", 0, 0),
    (
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Za-z0-9_]+/[A-Za-z0-9_/]+",
        0,
        0,
    ),
    # Google API keys (`AIza` + 35) and OAuth access tokens (`ya29.`).
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}", 0, 0),
    ("google-oauth-token", r"\bya29\.[0-9A-Za-z_\-]{20,}", 0, 0),
    # Stripe secret and restricted keys (Stripe docs, "API keys").
    ("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", 0, 0),
    # Square OAuth application secrets (Square developer docs, OAuth API: `sq0csp-`).
    ("square-secret", rf"\bsq0csp-{_KEYCHARS}{{40,}}", 0, 0),
    # SendGrid API keys (Twilio SendGrid docs, "API keys"): `SG.`, a 22-character ID,
    # `.` and a 43-character secret.
    ("sendgrid-key", rf"\bSG\.{_KEYCHARS}{{22}}\.{_KEYCHARS}{{43}}{_END}", 0, 0),
    # PyPI API tokens (PyPI help, "API tokens": `pypi-`): a macaroon, version 2 in base64
    # (its first bytes 0x02 0x01 read `AgE`), about 180 characters.
    ("pypi-token", rf"\bpypi-AgE{_KEYCHARS}{{50,}}", 0, 0),
    # npm access tokens (npm docs, "About access tokens": `npm_` + 36) anywhere, and the
    # legacy ones (UUIDs) where `.npmrc` names them (`//registry/:_authToken=`).
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", 0, 0),
    (
        "npm-token",
        rf"/:_authToken=\s*[\"']?({_UUID})\b",
        0,
        1,
    ),
    # Hugging Face user access tokens (Hub docs, "User access tokens": `hf_`).
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{34,}\b", 0, 0),
    ("digitalocean-token", r"\bdo[opr]_v1_[a-f0-9]{64}\b", 0, 0),
    ("shopify-token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", 0, 0),
    ("linear-key", r"\blin_api_[A-Za-z0-9]{40}\b", 0, 0),
    ("databricks-token", r"\bdapi[a-f0-9]{32}\b", 0, 0),
    ("postman-key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b", 0, 0),
    ("doppler-token", r"\bdp\.(?:pt|st|ct|sa)\.[A-Za-z0-9]{40,}", 0, 0),
    ("age-secret-key", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b", 0, 0),
    # JSON Web Tokens (RFC 7519; compact JWS, RFC 7515, and JWE, RFC 7516): base64url
    # parts joined by dots, the first a JSON object (`{"` reads `eyJ`); a JWS has three
    # (its signature empty for `alg: none`), a JWE five. Before `Bearer`: the more exact.
    (
        "jwt",
        rf"\beyJ{_KEYCHARS}{{10,}}=*\.{_KEYCHARS}+=*(?:\.{_KEYCHARS}*=*){{1,3}}",
        0,
        0,
    ),
    # Discord bot tokens (`Authorization: Bot …`; the example in Discord's API reference,
    # "Authentication", has this shape): three parts, the bot's user ID in base64, a
    # timestamp (6 characters) and an HMAC (27 or more). The ID is a snowflake of 15 to
    # 20 decimal digits, and base64 of ASCII digits has a fixed shape: each 3 digits
    # read `[MNO][DTjz][AEIMQUYcgk][w-z0-5]`, and the last 1 or 2 read `[MNO][AQgw]` or
    # `[MNO][DTjz][AEIMQUYcgk]`; a dotted name (`NetworkRequestSerializer.client.…`)
    # does not.
    (
        "discord-token",
        rf"\b{_DIGITS_B64}{{5,6}}(?:[MNO][DTjz][AEIMQUYcgk]|[MNO][AQgw])?"
        rf"\.{_KEYCHARS}{{6}}\.{_KEYCHARS}{{27,}}",
        0,
        0,
    ),
    # Telegram bot tokens (Bot API docs, "Authorizing your bot"): the bot's numeric ID,
    # `:` and 35 characters (also inside `api.telegram.org/bot<token>/…`).
    ("telegram-token", rf"(?<![0-9])[0-9]{{8,10}}:{_KEYCHARS}{{35}}{_END}", 0, 0),
    # Mailchimp API keys (Marketing API docs, "Quick start"): 32 hex digits, `-us` and
    # the number of the key's data centre.
    ("mailchimp-key", rf"\b{_HEX}{{32}}-us[0-9]{{1,2}}\b", 0, 0),
    # Twilio (docs, "API keys" and "Account SID"): an API key's SID (`SK`) or an account
    # SID (`AC`), each with 32 hex digits.
    ("twilio-key", rf"\b(?:AC|SK){_HEX}{{32}}\b", 0, 0),
    (
        "bearer-token",
        r"\b[Bb]earer\s+((?=[A-Za-z0-9._~+/\-]*[0-9])[A-Za-z0-9._~+/\-]{20,}=*)",
        0,
        1,
    ),
    # scheme://user:password@host (RFC 3986's userinfo); the password only.
    ("url-password", r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:([^\s/@]+)@", 0, 1),
)
"""Every provider format of the screen, most specific first: when two rules match one
span, the earlier names it (an Anthropic key also has OpenAI's `sk-` shape)."""
