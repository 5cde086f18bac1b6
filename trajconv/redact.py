"""Secrets in session text, found and replaced by ``[REDACTED:<kind>]`` before data leaves.

Detection is Yelp's ``detect-secrets`` (its plugins: AWS, Azure, GitHub, GitLab, Slack,
Stripe, Twilio, SendGrid, npm, PyPI, Discord, Telegram, Mailchimp, IBM, Artifactory,
private keys, JSON Web Tokens, basic-auth URLs, ``password = "..."`` keywords and
high-entropy quoted strings) plus the AI providers' key shapes it does not know (OpenAI
``sk-proj-``/``sk-``, Anthropic ``sk-ant-``, Google ``AIza``, xAI ``xai-``, Hugging Face
``hf_``, Groq ``gsk_``, Replicate ``r8_``).

It **fails closed**: a field longer than :data:`MAX_FIELD` characters, or one the detector
fails on, is replaced whole by ``[REDACTED:unscanned]`` and counted, never written
unscanned. A line longer than :data:`WINDOW` characters is scanned in overlapping windows,
so a secret shorter than :data:`OVERLAP` is never cut in two. The counts (by kind, never
the values) are what a caller reports.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

MAX_FIELD = 16 * 1024 * 1024
"""The longest text scanned (characters); a longer one is dropped and counted."""
WINDOW = 64 * 1024
OVERLAP = 2048
UNSCANNED = "unscanned"

#: key shapes of AI providers (detect-secrets 1.5 knows only OpenAI's old ``sk-...T3BlbkFJ``)
_PROVIDERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # a whole PEM block (detect-secrets finds the header line alone)
    (
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END[A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
    ),
    # an AWS secret access key beside its name, quoted or not (detect-secrets wants quotes)
    (
        "aws-secret-key",
        re.compile(
            r"(?i)aws.{0,20}?(?:secret|key).{0,20}?[=:]\s*['\"]?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
    ),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("xai-key", re.compile(r"\bxai-[A-Za-z0-9]{20,}")),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("groq-key", re.compile(r"\bgsk_[A-Za-z0-9]{40,}")),
    ("replicate-token", re.compile(r"\br8_[A-Za-z0-9]{30,}")),
)
#: a line can hold a secret detect-secrets finds only if it has one of these: a token of 10
#: or more key characters, a URL with credentials, a keyword, a PEM header (checked against
#: each plugin's patterns: every one needs at least one of them)
_CANDIDATE = re.compile(
    r"[A-Za-z0-9+/=_\-.:]{10}|://|BEGIN|pass|pwd|secret|key|token|contrase",
    re.IGNORECASE,
)
#: what a found value is widened to: a plugin may report part of a token (GitHub's prefix
#: ``ghp``, a JSON Web Token without its signature), and the whole token is the secret
_TOKEN_CHAR = re.compile(r"[A-Za-z0-9_\-+.]")
#: detect-secrets types left out: a public IP address is not a credential
_NOT_SECRETS = frozenset({"Public IP (ipv4)"})


@functools.cache
def _plugins() -> tuple[Any, ...]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    found: list[Any] = []
    mapping: dict[str, Any] = get_mapping_from_secret_type_to_class()
    for kind, cls in sorted(mapping.items()):
        if kind in _NOT_SECRETS:
            continue
        if kind == "Base64 High Entropy String":
            found.append(cls(limit=4.5))  # detect-secrets' own defaults
        elif kind == "Hex High Entropy String":
            found.append(cls(limit=3.0))
        else:
            found.append(cls())
    return tuple(found)


def _kind(secret_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


def _windows(line: str) -> Iterator[str]:
    if len(line) <= WINDOW:
        yield line
        return
    step = WINDOW - OVERLAP
    for start in range(0, len(line), step):
        yield line[start : start + WINDOW]
        if start + WINDOW >= len(line):
            return


def find_secrets(text: str) -> list[tuple[str, str]]:
    """``(value, kind)`` of every secret found in ``text``, longest values first."""
    found: dict[str, str] = {}
    for kind, pattern in _PROVIDERS:
        for m in pattern.finditer(text):
            found.setdefault(m.group(pattern.groups), kind)  # the value: its group, if any
    plugins = _plugins()
    for line in text.splitlines():
        if not _CANDIDATE.search(line):
            continue
        for piece in _windows(line):
            for plugin in plugins:
                for secret in plugin.analyze_line(filename="session", line=piece, line_number=0):
                    value = secret.secret_value
                    if not value:
                        continue
                    for whole in _widened(piece, value):
                        if len(whole) >= 4:
                            found.setdefault(whole, _kind(secret.type))
    return sorted(found.items(), key=lambda item: (-len(item[0]), item[0]))


def _widened(line: str, value: str) -> Iterator[str]:
    """Each occurrence of ``value`` in ``line``, widened to the whole token around it."""
    at = line.find(value)
    while at >= 0:
        start, end = at, at + len(value)
        while start > 0 and _TOKEN_CHAR.match(line[start - 1]):
            start -= 1
        while end < len(line) and (_TOKEN_CHAR.match(line[end]) or line[end] == "="):
            end += 1  # base64 padding
        yield line[start:end]
        at = line.find(value, at + len(value))


def _replace(text: str, secrets: list[tuple[str, str]], counts: Counter[str]) -> str:
    for value, kind in secrets:
        n = text.count(value)
        if n:
            text = text.replace(value, f"[REDACTED:{kind}]")
            counts[kind] += n
    return text


@dataclass
class Redactor:
    """Redacts one session's fields and counts what it replaced (by kind)."""

    counts: Counter[str] = field(default_factory=Counter)

    def text(self, value: str) -> str:
        """``value`` with every secret found in it replaced."""
        if not value:
            return value
        if len(value) > MAX_FIELD:
            self.counts[UNSCANNED] += 1
            return f"[REDACTED:{UNSCANNED}]"
        try:
            secrets = find_secrets(value)
        except Exception:  # fail closed: a field the detector fails on is never written
            self.counts[UNSCANNED] += 1
            return f"[REDACTED:{UNSCANNED}]"
        return _replace(value, secrets, self.counts) if secrets else value

    def json(self, value: Any) -> Any:
        """A JSON value (tool arguments) with secrets replaced in every string, member
        names included: found in its text as a whole, so ``{"password": "x"}`` is seen
        with its key."""
        try:
            whole = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
        except TypeError:
            self.counts[UNSCANNED] += 1
            return f"[REDACTED:{UNSCANNED}]"
        if len(whole) > MAX_FIELD:
            self.counts[UNSCANNED] += 1
            return f"[REDACTED:{UNSCANNED}]"
        try:
            secrets = find_secrets(whole)
            # a string's JSON escapes hide a value: look in its decoded leaves as well
            leaves = [s for s in _strings(value) if s and _CANDIDATE.search(s)]
            secrets += [sv for leaf in leaves for sv in find_secrets(leaf)]
        except Exception:
            self.counts[UNSCANNED] += 1
            return f"[REDACTED:{UNSCANNED}]"
        if not secrets:
            return value
        ordered = sorted(dict(secrets).items(), key=lambda item: (-len(item[0]), item[0]))
        return _walk(value, ordered, self.counts)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _walk(value: Any, secrets: list[tuple[str, str]], counts: Counter[str]) -> Any:
    if isinstance(value, str):
        return _replace(value, secrets, counts)
    if isinstance(value, dict):
        return {_replace(k, secrets, counts): _walk(v, secrets, counts) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, secrets, counts) for v in value]
    return value


def redacted(snapshot: Any, red: Any | None = None, *, only: Any = None) -> Any:
    """``snapshot`` with every text redacted (session title, records, sub-agents), rebuilt so
    its hashes hold, without artifacts: the native bytes are not redacted, so they never go
    out. What was replaced is counted by kind in a ``secret-redacted`` diagnostic beside the
    reader's. ``red`` is the :class:`Redactor` to count with; ``only``, a session of the
    Snapshot (its own or a sub-agent's), makes a Snapshot of that session alone."""
    from trajconv.snapshot.builder import SnapshotBuilder
    from trajconv.snapshot.spool import record_dicts

    red = red if red is not None else Redactor()
    if only is None:
        parts = [(snapshot.source, snapshot.session, snapshot.records)]
        kids = [(c.source, c.session, c.records, c.parent_call_id) for c in snapshot.children]
    else:
        found = [(snapshot.source, snapshot.session, snapshot.records)] + [
            (c.source, c.session, c.records) for c in snapshot.children
        ]
        parts = [next(p for p in found if p[1] is only)]
        kids = []
    source, session, records = parts[0]
    b = SnapshotBuilder(source, snapshot.producer.reader)

    def facts(s: Any) -> Any:
        return s.model_copy(update={"title": red.text(s.title) if s.title else s.title})

    b.session = facts(session)
    _copy(b, record_dicts(records), red)
    for kid_source, kid_session, kid_records, call in kids:
        kid = b.child(kid_source, call)
        kid.session = facts(kid_session)
        _copy(kid, record_dicts(kid_records), red)
    for d in snapshot.diagnostics:  # the reader's findings stand
        b.diagnostics.add(d.code, None, d.count)
    for kind, n in sorted(red.counts.items()):
        b.diagnostics.add("secret-redacted", None, n, name=kind)
    return b.build()


def _copy(b: Any, records: Any, red: Any) -> None:
    for r in records:
        kind, ev = r["kind"], r["evidence"]
        at = {"time": r.get("time"), "turn": r.get("turn"), "evidence": ev}
        if kind == "tool-call":
            c = r["call"]
            b.add_call(r["id"], c["id"], red.text(c["name"]), red.json(c["arguments"]), **at)
        elif kind == "tool-result":
            x = r["result"]
            b.add_result(
                r["id"],
                x["call_id"],
                x["ok"],
                red.text(x["output"]),
                truncated=x.get("truncated", False),
                exit_code=x.get("exit_code"),
                **at,
            )
        else:
            b.add_text(kind, r["id"], red.text(r.get("text") or ""), model=r.get("model"), **at)
