"""Qwen Code itself (npm @qwen-code/qwen-code, pinned) resumes what we write, and its model
request carries every earlier turn, call and result in order, nothing invented.

Each qwen fixture and a Gemini CLI, Claude Code and Codex fixture converted to qwen are
installed with the export's own prepare.py into a scratch home, listed (``qwen sessions
list``) and resumed for one turn (``qwen --resume ID -p PROMPT``) against the loopback model
server, the CLI runs started together (each takes ~8 s here).
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import trajconv
from proof import tools_dir
from proof.loaders import qwen as loader
from tests.conftest import require_loader
from tests.helpers import FIXTURES
from tests.qwen.test_qwen import FILES, IDS

PROMPT = "Continue from where we stopped."
FOREIGN = {
    "gemini": next(FIXTURES.glob("gemini/recorded-tool-failures/.gemini/tmp/*/chats/session-*")),
    "grok": next(FIXTURES.glob("grok/recorded-tool-failures/sessions/*/*/updates.jsonl")).parent,
}
CASES = [("qwen", p) for p in FILES] + list(FOREIGN.items())
CASE_IDS = [f"qwen-{i}" for i in IDS] + [f"{h}-to-qwen" for h in FOREIGN]


def _resume(exe: Path, harness: str, src: Path, scratch: Path) -> dict[str, Any]:
    project = scratch / "project"
    home = scratch / "home"
    project.mkdir(parents=True)
    snap = trajconv.read(harness, src)
    export = trajconv.write(snap, "qwen", scratch / "out", cwd=str(project), allow_lossy=True)
    prep = subprocess.run(
        [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert prep.returncode == 0, prep.stderr
    listing = loader.list_sessions(loader.find(tools_dir()) or exe, home, project)
    bodies = loader.continue_session(exe, home, export.session_id, str(project), PROMPT, scratch)
    return {"snap": snap, "export": export, "listing": listing, "bodies": bodies}


@pytest.fixture(scope="module")
def resumed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    exe = loader.find(tools_dir())
    require_loader(exe, "qwen")
    assert exe is not None
    root = tmp_path_factory.mktemp("qwen-resume")
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {
            cid: pool.submit(_resume, exe, harness, src, root / cid)
            for cid, (harness, src) in zip(CASE_IDS, CASES, strict=True)
        }
        return {cid: f.result() for cid, f in futures.items()}


@pytest.mark.parametrize("cid", CASE_IDS)
def test_resumed_request_carries_the_whole_history(
    cid: str, resumed: dict[str, dict[str, Any]]
) -> None:
    run = resumed[cid]
    sid = run["export"].session_id
    assert sid in run["listing"]  # qwen sessions list shows it
    assert len(run["bodies"]) == 1  # one main request: the new prompt
    items = loader.request_items(run["bodies"][0])
    assert loader.seen_items(items) == loader.expected_items(run["snap"].records, PROMPT)
    # each result answers the call sent before it, by the id the session holds
    calls = [it["id"] for it in items if it["kind"] == "tool-call"]
    results = [it["call_id"] for it in items if it["kind"] == "tool-result"]
    assert results == calls
    # the CLI's own start-up context goes with the first prompt, never as a record
    assert any(it["kind"] == "system" and "<system-reminder>" in it["text"] for it in items)


def test_the_parity_check_lists_and_resumes_a_written_export(tmp_path: Path) -> None:
    """``verify_export`` (what ``trajconv parity --write`` runs per pair into qwen) installs the
    export for a scratch folder, and the CLI lists it and replays the re-read history."""
    require_loader(loader.find(tools_dir()), "qwen")
    src = next(p for p in FILES if "subagent-compress" in str(p))
    _snap, export = trajconv.convert("qwen", "qwen", src, tmp_path / "out")
    written = trajconv.read("qwen", export.out_dir / "home", session=export.session_id)
    verdict = loader.verify_export(export, written)
    assert verdict is not None and verdict["ok"], verdict
    assert verdict["version"] == loader.VERSION


def _reminder(body: str) -> dict[str, str]:
    return {"type": "text", "text": f"<system-reminder>\n{body}\n</system-reminder>"}


def test_the_clis_context_is_told_by_where_it_puts_it() -> None:
    """The CLI's start-up reminders lead the first user message and its date reminder goes
    right before the new prompt (``getInitialChatHistory``, the turn's ``systemReminders``);
    consecutive user records reach it as one message, a part each (``extractCuratedHistory``).
    A session's own ``<system-reminder>`` text (Grok's workflows, as ATIF keeps it) and an
    unanswered last prompt are the session's, each an item of its own."""
    body = {
        "messages": [
            {"role": "system", "content": "You are Qwen Code."},
            {
                "role": "user",
                "content": [
                    _reminder("The following skills are available"),
                    _reminder("This is the Qwen Code."),
                    {"type": "text", "text": "<user_info>x</user_info>"},
                    _reminder("The following workflows are available"),
                    {"type": "text", "text": "first"},
                ],
            },
            {"role": "assistant", "content": "answer"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "unanswered"},
                    _reminder("The current date is: today."),
                    {"type": "text", "text": PROMPT},
                ],
            },
        ]
    }
    items = loader.request_items(body)
    sent = [
        body["messages"][0]["content"],
        *(p["text"] for p in body["messages"][1]["content"]),
        "answer",
        *(p["text"] for p in body["messages"][3]["content"]),
    ]
    assert [i["text"] for i in items] == sent
    kinds = ["system", "system", "system", "user", "user", "user", "assistant", "user"]
    assert [i["kind"] for i in items] == [*kinds, "system", "user"]


def test_an_answers_texts_are_expected_as_the_converter_joins_them() -> None:
    """Aider's answer and its edit error are one model Content of the written session, which
    the CLI's OpenAI converter sends as one assistant text (``processContent`` joins the text
    parts with nothing between); the two prompts after it stay a part each."""
    snap = trajconv.read("aider", FIXTURES / "aider/recorded-edits")
    texts = {r.id: r.text for r in snap.records if r.kind in ("user", "assistant")}
    expected = loader.expected_items(snap.records, PROMPT)
    assert expected == [
        ("user", texts["aider:L11"]),
        ("assistant", texts["aider:L12"]),
        ("user", texts["aider:L37"]),
        ("assistant", texts["aider:L38"] + texts["aider:L52"]),
        ("user", texts["aider:L85"]),
        ("user", texts["aider:L98"]),
        ("assistant", texts["aider:L99"]),
        ("user", PROMPT),
    ]


#: the parity pairs whose export the CLI once resumed with another history than expected
PARITY_PAIRS = [
    ("aider", "recorded-edits", None),
    ("atif", "harbor-grok-multi-turn", None),
    ("codex", "legacy", "3f2a8c1e-5b7d-4e90-a1c2-6d4e8f0b9a13"),
    ("opencode", "legacy-json", "ses_dd60ed7ffffeKy9Pf34qY6Nb3w"),
]


@pytest.mark.parametrize(
    ("harness", "case", "session"), PARITY_PAIRS, ids=[f"{h}-{c}" for h, c, _ in PARITY_PAIRS]
)
def test_the_parity_check_of_a_foreign_export_sees_its_history(
    harness: str, case: str, session: str | None, tmp_path: Path
) -> None:
    """``trajconv parity``'s pair into qwen, as it builds it (``run_pair``): joined answer
    texts, consecutive prompts, a session's own ``<system-reminder>`` text and an unanswered
    last prompt are all seen as :func:`loader.expected_items` says."""
    from proof.verify import check_export
    from trajconv import parity
    from trajconv.codecs import registry

    require_loader(loader.find(tools_dir()), "qwen")
    fx = next(
        f
        for f in parity.fixture_sessions(registry.get(harness))
        if f.case == case and (session is None or f.session == session)
    )
    snap = trajconv.read(harness, fx.path, session=fx.session)
    res = parity.run_pair(fx, registry.get("qwen"), snap, tmp_path, check_export)
    assert res.loader is not None and res.loader["ok"], res.loader
