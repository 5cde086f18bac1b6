"""Continue a written session for one turn in the real target CLI and compare what the model saw.

The promise of a conversion is not only that the target lists and loads the session: when the
user continues it, the model's next request carries the earlier conversation as the source
harness showed it. This module checks that, for any harness whose loader module
``proof/loaders/<name>.py`` exposes the continuation contract (``docs/adding-a-codec.md``,
"The rig")::

    continue_session(exe, home, session_id, cwd, prompt, workdir) -> [request body, ...]
    request_items(body) -> [{"kind": ..., ...}, ...]

plus ``find(tools)``. Optional, backward compatible additions a loader module may define:

* ``install_export(export_dir, home)``: install an export into a scratch home (default: run the
  export's ``prepare.py --home HOME`` with this Python);
* ``install_fixture(case_dir, home)``: place an original fixture session into a scratch home
  (only needed to record a baseline); with ``NEEDS_PROJECT_DIR``
  ``install_fixture(case_dir, home, project)`` installs it for the scratch folder ``project``;
* ``CONTINUATION_CASE = (case, session id or None)``: the fixture session
  (``fixtures/<name>/<case>``) whose stored baseline makes the harness a continuation source;
* ``STILL_DIFFERENT = {code: count}``: as a source, what its conversation still differs in
  when continued in the targets that pin it (``PINS_DIFFERENCES``), each difference named by
  the code (``tests/continuation/test_continuation.py`` holds the pairs to it);
* ``CONTINUE_CPU_SECONDS``: CPU seconds one continued turn costs in this CLI (default 3), so
  that the pair runs start the costliest targets first;
* ``NEEDS_PROJECT_DIR``: ``True`` when the CLI only resumes a session from inside its existing
  project folder (then the pair check writes the session for a scratch folder, ``--cwd``);
* ``REPLAYS_REASONING``: ``False`` when the CLI does not send reasoning of its own sessions back
  to the model (then reasoning is not compared in its pairs, as source or target: a target
  that replays reasoning the source's model never saw again is doing what it does for its own
  sessions; default ``True``);
* ``sent_call_id(call_id, tool_name) -> str``: the id the CLI sends the model for a stored
  call id, when it differs (Gemini CLI strips its ``<tool>__`` prefix); default: the same;
* ``unwrap_user(text) -> (core, context)``: split the harness's own wrapping off a user message
  as its requests show it: ``core`` is what the user typed, ``context`` the information the
  harness added (a date, workspace facts) or None. A message that is all context (an injected
  ``<user_info>`` entry) has core ``""``. Pure delimiters (Grok's ``<user_query>``) are dropped:
  each harness wraps every prompt its own way, old and new alike. Default: no wrapping.

**Baseline**: the request the *source* harness sends when its original fixture session is
continued with the same prompt (``record_baseline``); it is stored as JSON beside the fixture
(``fixtures/<harness>/<case>/continuation-baseline.json``) so the check does not need the source
CLI. **Compare** (``compare``): both requests are turned into conversation items, the system
prompt and the new prompt left aside; items are aligned in order and every baseline item is
*same*, *changed* (which fields) or *missing*; target items with no baseline counterpart are
*extra*. A difference is *named* when the writer (or, for what it did not project, the reader)
emitted a diagnostic code that accounts for it (``DIFF_CODES``, counted: one diagnostic
occurrence names one difference); otherwise it is *unexplained*, which the CI test and
``parity --check`` reject. Extra items are never named: nothing may be invented. A reasoning
item that the target sends as assistant text (its writer said ``reasoning-as-text``: OpenCode
replays reasoning as reasoning only to the model that wrote it) is compared as that text,
joined with the assistant text right after it, and is one named difference; where the source's
model was not sent its reasoning again, the code names an assistant text the reasoning joined.
"""

from __future__ import annotations

import difflib
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from proof import loader, tools_dir

if TYPE_CHECKING:
    from fixtures.record.modelserver import ModelServer
    from trajconv.snapshot.models import Snapshot

JsonObj = dict[str, Any]
Item = dict[str, Any]

#: the prompt every continuation (baseline and check) sends
PROMPT = "trajconv continuation check: what did we do so far?"
#: the scripted model's answer to it
REPLY = "We went through the earlier steps."
BASELINE_NAME = "continuation-baseline.json"
BASELINE_FORMAT = "trajconv.continuation-baseline/1"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

#: diagnostic codes (of the writer, or of the reader for what it did not project) that
#: account for one difference of (baseline item kind, difference)
DIFF_CODES: dict[tuple[str, str], tuple[str, ...]] = {
    ("reasoning", "missing"): ("untranslated-reasoning",),
    ("reasoning", "text"): ("untranslated-reasoning", "untranslated-message-boundary"),
    ("user", "missing"): ("untranslated-user", "untranslated-steering", "user-read-as-command"),
    ("user", "context"): ("context-not-projected",),
    ("context", "missing"): (
        "context-not-projected",
        "untranslated-system",
        "system-not-sent",
        "context-as-system",
    ),
    ("assistant", "missing"): ("untranslated-assistant", "untranslated-message-boundary"),
    ("assistant", "text"): ("untranslated-message-boundary", "reasoning-as-text"),
    ("tool-call", "missing"): ("untranslated-pending-call", "untranslated-tool-call"),
    ("tool-result", "missing"): (
        "untranslated-orphan-result",
        "repeated-result-replayed",
        "untranslated-tool-result",
    ),
    ("tool-result", "error"): ("untranslated-exit-code", "untranslated-tool-status"),
    ("tool-result", "text"): ("exit-status-in-text",),
}


class ContinuationError(RuntimeError):
    """A continuation could not be run (CLI missing, no request recorded, bad baseline)."""


# --------------------------------------------------------------------------- harness modules


def harness_module(name: str) -> ModuleType | None:
    """The loader module of harness ``name`` when it implements the continuation contract."""
    mod = loader(name)
    if mod is None:
        return None
    if all(callable(getattr(mod, f, None)) for f in ("continue_session", "request_items", "find")):
        return mod
    return None


def continuable(names: Sequence[str]) -> list[str]:
    """Those of ``names`` whose loader module implements the contract."""
    return [n for n in names if harness_module(n) is not None]


def _module(name: str) -> ModuleType:
    mod = harness_module(name)
    if mod is None:
        raise ContinuationError(f"proof/loaders/{name}.py has no continue_session/request_items")
    return mod


def find_cli(name: str, tools: Path | None = None) -> Path | None:
    found = _module(name).find(tools or tools_dir())
    return Path(found) if found else None


# --------------------------------------------------------------------------- shared helpers


@contextmanager
def scripted_server(
    workdir: Path, side: list[JsonObj] | None = None, model: str = "scripted"
) -> Iterator[ModelServer]:
    """The project's loopback model server answering the one continued turn with ``REPLY``.

    Its request log is ``workdir/requests.jsonl``. The server lives in ``fixtures/record`` (a
    repository folder, not part of the installed package): continuation runs from a checkout.
    """
    try:
        from fixtures.record.modelserver import ModelServer
    except ImportError as exc:  # pragma: no cover - only outside a checkout
        raise ContinuationError(
            "the loopback model server (fixtures/record/modelserver.py) is not importable; "
            "run from the repository root"
        ) from exc
    workdir.mkdir(parents=True, exist_ok=True)
    with ModelServer([{"text": REPLY}], workdir / "requests.jsonl", side=side, model=model) as srv:
        yield srv


def main_bodies(log: Path) -> list[JsonObj]:
    """JSON bodies of the model requests the script answered (side requests left out)."""
    out: list[JsonObj] = []
    if not log.is_file():
        return out
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("answer") in ("script", "fallback") and isinstance(entry.get("body"), dict):
            out.append(entry["body"])
    return out


def _content_text(content: Any) -> str:
    """Text of a message content: a string or a list of text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict) and isinstance(p.get("text"), str):
                parts.append(p["text"])
        return "".join(parts)
    return ""


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return {"_raw": raw}
    return raw


def openai_items(body: Mapping[str, Any]) -> list[Item]:
    """Conversation items of an OpenAI Chat Completions or Responses request body."""
    if isinstance(body.get("messages"), list):
        return _chat_items(body["messages"])
    items: list[Item] = []
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        items.append({"kind": "system", "text": body["instructions"]})
    inp = body.get("input")
    if isinstance(inp, str):
        return [*items, {"kind": "user", "text": inp}]
    if isinstance(inp, list):
        items += _responses_items(inp)
    return items


def _chat_items(messages: list[Any]) -> list[Item]:
    items: list[Item] = []
    for m in messages:
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        text = _content_text(m.get("content"))
        if role in ("system", "developer"):
            items.append({"kind": "system", "text": text})
        elif role == "user":
            items.append({"kind": "user", "text": text})
        elif role == "tool":
            items.append(
                {
                    "kind": "tool-result",
                    "call_id": m.get("tool_call_id"),
                    "text": text,
                    "error": None,
                }
            )
        elif role == "assistant":
            before = len(items)
            reasoning = m.get("reasoning_content") or m.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                items.append({"kind": "reasoning", "text": reasoning})
            if text:
                items.append({"kind": "assistant", "text": text})
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                items.append(
                    {
                        "kind": "tool-call",
                        "name": fn.get("name"),
                        "arguments": _arguments(fn.get("arguments")),
                        "id": call.get("id"),
                    }
                )
            if len(items) == before:  # an empty assistant message is still sent to the model
                items.append({"kind": "assistant", "text": ""})
    return items


def _responses_items(inp: list[Any]) -> list[Item]:
    items: list[Item] = []
    for it in inp:
        if not isinstance(it, dict):
            continue
        typ = it.get("type", "message")
        if typ == "message":
            role = it.get("role")
            kind = {"system": "system", "developer": "system", "user": "user"}.get(
                str(role), "assistant"
            )
            items.append({"kind": kind, "text": _content_text(it.get("content"))})
        elif typ == "reasoning":
            text = _content_text(it.get("summary")) or _content_text(it.get("content"))
            items.append({"kind": "reasoning", "text": text})
        elif typ in ("function_call", "custom_tool_call"):
            raw = it.get("arguments", it.get("input"))
            items.append(
                {
                    "kind": "tool-call",
                    "name": it.get("name"),
                    "arguments": _arguments(raw),
                    "id": it.get("call_id"),
                }
            )
        elif typ in ("function_call_output", "custom_tool_call_output"):
            out = it.get("output")
            items.append(
                {
                    "kind": "tool-result",
                    "call_id": it.get("call_id"),
                    "text": out if isinstance(out, str) else _content_text(out),
                    "error": None,
                }
            )
    return items


# --------------------------------------------------------------------------- running


def items_of(name: str, bodies: list[JsonObj]) -> list[Item]:
    """What the model saw in the last main request (the one answering the new prompt)."""
    if not bodies:
        raise ContinuationError(f"{name}: the continued turn made no model request")
    items: list[Item] = _module(name).request_items(bodies[-1])
    return items


def install_export(name: str, export_dir: Path, home: Path) -> None:
    """Install an export into ``home`` with the target's hook, else with its ``prepare.py``
    after the target's ``before_install(home)`` (the settings its offline runs use, which a
    prepare may check: Gemini CLI's session retention)."""
    module = _module(name)
    hook = getattr(module, "install_export", None)
    if callable(hook):
        hook(export_dir, home)
        return
    setup = getattr(module, "before_install", None)
    if callable(setup):
        setup(home)
    done = subprocess.run(
        [sys.executable, str(export_dir / "prepare.py"), "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise ContinuationError(f"{export_dir}/prepare.py exited {done.returncode}: {done.stderr}")


def continue_export(
    target: str,
    export_dir: Path,
    session_id: str,
    cwd: str,
    *,
    prompt: str = PROMPT,
    tools: Path | None = None,
) -> tuple[list[JsonObj], list[Item]]:
    """Install ``export_dir`` in a scratch home, continue one turn; (bodies, items)."""
    mod = _module(target)
    exe = find_cli(target, tools)
    if exe is None:
        raise ContinuationError(f"the {target} CLI is not installed (python -m proof)")
    with tempfile.TemporaryDirectory(prefix=f"trajconv-continue-{target}-") as tmp:
        home, work = Path(tmp) / "home", Path(tmp) / "work"
        home.mkdir()
        work.mkdir()
        install_export(target, export_dir, home)
        bodies: list[JsonObj] = mod.continue_session(exe, home, session_id, cwd, prompt, work)
    return bodies, items_of(target, bodies)


# --------------------------------------------------------------------------- baselines


def case_of(harness: str) -> tuple[str, str | None]:
    """The continuation fixture of ``harness``: its loader module's ``CONTINUATION_CASE``
    (``(case folder, session id or None)``)."""
    own = getattr(_module(harness), "CONTINUATION_CASE", None)
    if own is None:
        raise ContinuationError(f"{harness} names no continuation fixture (CONTINUATION_CASE)")
    return (str(own[0]), None if own[1] is None else str(own[1]))


def sources(names: Sequence[str]) -> list[str]:
    """Those of ``names`` that can be a continuation source: contract, fixture, baseline.

    The pair check runs among these only: a harness joins, as source and as target, once
    its continuation fixture has a recorded baseline. Until then its own loader tests
    continue what trajconv writes and compare the request with the written session."""
    out = []
    for name in continuable(names):
        try:
            if baseline_path(name).is_file():
                out.append(name)
        except ContinuationError:
            continue
    return out


def baseline_path(harness: str) -> Path:
    return FIXTURES / harness / case_of(harness)[0] / BASELINE_NAME


def record_baseline(harness: str, tools: Path | None = None) -> Path:
    """Continue the original fixture session in its own CLI and store the request it sent."""
    case = case_of(harness)[0]
    case_dir = FIXTURES / harness / case
    mod = _module(harness)
    exe = find_cli(harness, tools)
    if exe is None:
        raise ContinuationError(f"the {harness} CLI is not installed")
    snap = read_fixture(harness)
    session_id, cwd = snap.session.id, snap.session.cwd or ""
    with tempfile.TemporaryDirectory(prefix=f"trajconv-baseline-{harness}-") as tmp:
        home, work = Path(tmp) / "home", Path(tmp) / "work"
        home.mkdir()
        work.mkdir()
        run_cwd = cwd
        if getattr(mod, "NEEDS_PROJECT_DIR", False):
            # the recorded project folder is not on this machine: the fixture is installed
            # for a scratch one (``install_fixture(case_dir, home, project)``)
            project = Path(tmp) / "project"
            project.mkdir()
            mod.install_fixture(case_dir, home, project)
            run_cwd = str(project)
        else:
            mod.install_fixture(case_dir, home)
        bodies: list[JsonObj] = mod.continue_session(exe, home, session_id, run_cwd, PROMPT, work)
    if not bodies:
        raise ContinuationError(f"{harness}/{case}: the continued turn made no model request")
    doc = {
        "format": BASELINE_FORMAT,
        "harness": harness,
        "case": case,
        "session_id": session_id,
        "cwd": cwd,
        "prompt": PROMPT,
        "cli": f"{mod.PACKAGE}@{mod.VERSION}",
        "made_by": f"python -m proof.continuation baseline {harness}",
        "request": _strip_request(bodies[-1]),
    }
    out = case_dir / BASELINE_NAME
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def read_fixture(harness: str) -> Snapshot:
    """The Snapshot of ``harness``'s continuation fixture session."""
    from trajconv import api
    from trajconv.codecs import registry

    case, session = case_of(harness)
    case_dir = FIXTURES / harness / case
    codec = registry.get(harness)
    refs = codec.discover(case_dir) if codec.can_discover else []
    if session is not None:
        refs = [r for r in refs if r.session_id == session]
    if len(refs) != 1:
        raise ContinuationError(f"{case_dir}: no single session {session or ''} here")
    return api.read(harness, refs[0].path, session=session)


#: request keys kept in a stored baseline (the conversation; tools schemas and the like are
#: large, harness-owned and not compared)
_KEEP_KEYS = ("model", "messages", "input", "instructions", "contents", "systemInstruction")


def _strip_request(body: JsonObj) -> JsonObj:
    """The conversation part of a request; system prompts reduced to their size."""
    out: JsonObj = {k: body[k] for k in _KEEP_KEYS if k in body}
    if isinstance(out.get("instructions"), str):
        out["instructions"] = f"(system prompt, {len(out['instructions'])} chars)"
    if isinstance(out.get("systemInstruction"), dict):  # Gemini API
        size = len(_content_text(out["systemInstruction"].get("parts")))
        out["systemInstruction"] = {"parts": [{"text": f"(system prompt, {size} chars)"}]}
    for key in ("messages", "input"):
        seq = out.get(key)
        if isinstance(seq, list):
            out[key] = [
                {**m, "content": f"(system prompt, {len(_content_text(m.get('content')))} chars)"}
                if isinstance(m, dict) and m.get("role") in ("system", "developer")
                else m
                for m in seq
            ]
    return out


def load_baseline(harness: str) -> JsonObj:
    path = baseline_path(harness)
    try:
        doc: JsonObj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ContinuationError(f"{path}: cannot read the baseline ({exc})") from exc
    if doc.get("format") != BASELINE_FORMAT or not isinstance(doc.get("request"), dict):
        raise ContinuationError(f"{path}: not a {BASELINE_FORMAT} document")
    return doc


# --------------------------------------------------------------------------- comparing


def conversation(items: list[Item], prompt: str) -> tuple[list[Item], bool]:
    """The earlier conversation (system items and the new prompt left out); prompt found?"""
    body = [i for i in items if i.get("kind") != "system"]
    found = bool(body) and body[-1].get("kind") == "user" and prompt in str(body[-1]["text"])
    return (body[:-1] if found else body), found


def _unwrapped(name: str, items: list[Item]) -> list[Item]:
    """User items split by the harness's ``unwrap_user``: core text plus ``context``."""
    unwrap = getattr(_module(name), "unwrap_user", None)
    if not callable(unwrap):
        return items
    out: list[Item] = []
    for item in items:
        if item.get("kind") == "user":
            core, context = unwrap(str(item.get("text", "")))
            kind = "context" if not core and context else "user"
            item = {**item, "kind": kind, "text": core, "context": context}
        out.append(item)
    return out


def _same_error(base: Item, got: Item, failed: frozenset[str]) -> bool:
    """Whether the target's model was told about the call's failure as the source's was.

    ``error`` is ``None`` where the API has no such field (Chat Completions, Responses): then
    only the text speaks. A target that has the field (Anthropic ``is_error``) must set it as
    the source *recorded* the call (``failed``: the call ids whose result the source stored as
    failed); a target without it matches a source that said ``false``, not one that said
    ``true`` (the failure must then be in the text, or a diagnostic must name it)."""
    b, g = base.get("error"), got.get("error")
    if b is None:
        return g is None or bool(g) == (base.get("call_id") in failed)
    return bool(b) == bool(g)


def _key(item: Item) -> tuple[Any, ...]:
    kind = item.get("kind")
    if kind == "tool-call":
        return (kind, item.get("name"), json.dumps(item.get("arguments"), sort_keys=True))
    if kind == "tool-result":
        return (kind, str(item.get("text", "")).strip())
    return (kind, str(item.get("text", "")).strip())


def _fields(base: Item, got: Item, failed: frozenset[str]) -> list[str]:
    if base.get("kind") == "tool-call":
        return [f for f in ("name", "arguments") if base.get(f) != got.get(f)]
    out = []
    if str(base.get("text", "")).strip() != str(got.get("text", "")).strip():
        out.append("text")
    if base.get("kind") == "tool-result" and not _same_error(base, got, failed):
        out.append("error")
    if base.get("context") and base.get("context") != got.get("context"):
        out.append("context")
    return out


@dataclass
class Difference:
    kind: str
    what: str  # missing | extra | text | error | name | arguments
    baseline: Item | None
    got: Item | None
    named_by: str | None = None

    def to_json(self) -> JsonObj:
        def short(i: Item | None) -> JsonObj | None:
            if i is None:
                return None
            return {k: (v[:160] if isinstance(v, str) else v) for k, v in i.items()}

        return {
            "kind": self.kind,
            "what": self.what,
            "baseline": short(self.baseline),
            "got": short(self.got),
            "named_by": self.named_by,
        }


@dataclass
class Comparison:
    source: str
    target: str
    total: int
    """baseline items compared (n)"""
    same: int
    """of them, seen by the target's model exactly as the source showed them (k)"""
    prompt_found: bool
    differences: list[Difference] = field(default_factory=list)

    @property
    def unexplained(self) -> list[Difference]:
        return [d for d in self.differences if d.named_by is None]

    @property
    def ok(self) -> bool:
        return self.prompt_found and not self.unexplained

    def summary(self) -> str:
        return f"model saw {self.same}/{self.total}"

    def named_codes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for d in self.differences:
            if d.named_by:
                out[d.named_by] = out.get(d.named_by, 0) + 1
        return out

    def to_json(self) -> JsonObj:
        return {
            "source": self.source,
            "target": self.target,
            "saw": self.same,
            "of": self.total,
            "prompt_found": self.prompt_found,
            "named": self.named_codes(),
            "unexplained": [d.to_json() for d in self.unexplained],
            "ok": self.ok,
        }


def replays_reasoning(name: str) -> bool:
    return bool(getattr(_module(name), "REPLAYS_REASONING", True))


def _reasoning_as_text(items: list[Item], shown: int) -> tuple[list[Item], list[Difference]]:
    """The baseline as a target shows it whose writer said ``reasoning-as-text`` ``shown``
    times: that many reasoning items reach the target's model as assistant text, joined with
    the assistant text right after them (same step). Each is one difference, named."""
    out: list[Item] = []
    diffs: list[Difference] = []
    for item in items:
        kind = item.get("kind")
        if kind == "reasoning" and shown > 0 and str(item.get("text", "")).strip():
            shown -= 1
            diffs.append(Difference("reasoning", "as-text", item, None, "reasoning-as-text"))
            out.append({"kind": "assistant", "text": item["text"], "reasoning_only": True})
        elif kind == "assistant" and out and out[-1].get("reasoning_only"):
            out[-1] = {"kind": "assistant", "text": str(out[-1]["text"]) + str(item["text"])}
        else:
            out.append(item)
    return out, diffs


def _joined(diffs: list[Difference]) -> list[Difference]:
    """A target that joins consecutive messages of one kind sends one where the baseline has
    several: the first differs in text, holding the others, which are missing. Each item
    joined is one difference (a boundary lost, which the writer names), so the first's text
    difference is dropped when its text is exactly its own and the missing ones' texts."""

    def bare(text: object) -> str:
        return "".join(str(text).split())

    missing = [
        (d.kind, bare(d.baseline.get("text", "")))
        for d in diffs
        if d.what == "missing" and d.baseline is not None
    ]
    dropped: list[Difference] = []
    for host in diffs:
        if host.what != "text" or host.baseline is None or host.got is None:
            continue
        got = bare(host.got.get("text", ""))
        parts = [text for kind, text in missing if kind == host.kind and text and text in got]
        if parts and bare(host.baseline.get("text", "")) + "".join(parts) == got:
            dropped.append(host)
    return [d for d in diffs if not any(d is x for x in dropped)]


def compare(
    source: str,
    target: str,
    baseline_items: list[Item],
    target_items: list[Item],
    codes: Mapping[str, int],
    prompt: str = PROMPT,
    failed: frozenset[str] = frozenset(),
) -> Comparison:
    """Align the two requests' conversations and name each difference by a writer code;
    ``failed``: the call ids whose results the source recorded as failed."""
    base, _ = conversation(_unwrapped(source, baseline_items), prompt)
    got, found = conversation(_unwrapped(target, target_items), prompt)
    # reasoning is compared where both harnesses send their own sessions' reasoning back
    if not replays_reasoning(target):
        base = [i for i in base if i.get("kind") != "reasoning"]
    if not replays_reasoning(source):
        # the source's CLI never showed its model the session's reasoning, so its baseline
        # has none to hold a target's to (the reasoning is the session's own, not invented)
        got = [i for i in got if i.get("kind") != "reasoning"]
    total = len(base)
    base, shown = _reasoning_as_text(base, codes.get("reasoning-as-text", 0))
    diffs: list[Difference] = list(shown)
    same = 0
    matcher = difflib.SequenceMatcher(
        a=[_key(i) for i in base], b=[_key(i) for i in got], autojunk=False
    )
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            for ai, bi in zip(range(a0, a1), range(b0, b1), strict=True):
                fields = _fields(base[ai], got[bi], failed)
                same += not fields and not base[ai].get("reasoning_only")
                diffs.extend(Difference(base[ai]["kind"], f, base[ai], got[bi]) for f in fields)
            continue
        pending = list(range(b0, b1))
        for ai in range(a0, a1):
            kind = str(base[ai].get("kind"))
            j = next((j for j in pending if got[j].get("kind") == kind), None)
            if j is None:
                diffs.append(Difference(kind, "missing", base[ai], None))
                continue
            pending.remove(j)
            diffs.extend(
                Difference(kind, f, base[ai], got[j]) for f in _fields(base[ai], got[j], failed)
            )
        diffs.extend(Difference(str(got[j].get("kind")), "extra", None, got[j]) for j in pending)
    diffs = _joined(diffs)
    budget = dict(codes)
    budget["reasoning-as-text"] = budget.get("reasoning-as-text", 0) - len(shown)
    for d in diffs:
        if d.named_by:
            continue
        for code in DIFF_CODES.get((d.kind, d.what), ()):
            if budget.get(code, 0) > 0:
                budget[code] -= 1
                d.named_by = code
                break
    return Comparison(source, target, total, same, found, diffs)


def check_pair(
    source: str,
    target: str,
    *,
    tools: Path | None = None,
    work: Path | None = None,
) -> tuple[Comparison, list[Item]]:
    """Convert ``source``'s continuation fixture to ``target``, continue it, compare."""
    from trajconv import api
    from trajconv.snapshot.models import ToolCallRecord, ToolResultRecord

    base = load_baseline(source)
    snap = read_fixture(source)
    with tempfile.TemporaryDirectory(prefix=f"trajconv-cont-{source}-{target}-") as tmp:
        out = (work or Path(tmp)) / f"{source}-to-{target}"
        cwd = snap.session.cwd or ""
        options: JsonObj = {}
        if getattr(_module(target), "NEEDS_PROJECT_DIR", False):
            # the CLI runs in the session's project folder, which is not on this machine:
            # the session is written for a scratch one (`convert --cwd`), as a user would
            project = Path(tmp) / "project"
            project.mkdir()
            cwd = options["cwd"] = str(project)
        export = api.write(snap, target, out, allow_lossy=True, **options)
        codes: dict[str, int] = {}
        for d in (*snap.diagnostics, *export.diagnostics):
            codes[d.code] = codes.get(d.code, 0) + d.count
        _bodies, items = continue_export(
            target, export.out_dir, export.session_id, cwd, tools=tools
        )
    base_items: list[Item] = _module(source).request_items(base["request"])
    sent = getattr(_module(source), "sent_call_id", lambda call_id, _name: call_id)
    names = {r.call.id: r.call.name for r in snap.records if isinstance(r, ToolCallRecord)}
    failed = frozenset(
        sent(r.result.call_id, names.get(r.result.call_id, ""))
        for r in snap.records
        if isinstance(r, ToolResultRecord) and r.result.ok is False
    )
    return compare(source, target, base_items, items, codes, failed=failed), items


def main(argv: list[str] | None = None) -> int:
    """``python -m proof.continuation baseline HARNESS`` or ``check SOURCE TARGET``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 2 and args[0] == "baseline":
        print(record_baseline(args[1]))
        return 0
    if len(args) == 3 and args[0] == "check":
        result, _ = check_pair(args[1], args[2])
        print(json.dumps(result.to_json(), indent=1, ensure_ascii=False))
        return 0 if result.ok else 1
    sys.stderr.write(main.__doc__ or "")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
