"""Continue converted sessions in the real CLIs: the model must see what the source showed it.

For every pair among the harnesses whose CLI runs here, the pair's continuation fixture is
converted, installed in a scratch home, continued for one turn against the loopback model
server, and the model request is compared with the source's stored baseline
(``fixtures/<harness>/<case>/continuation-baseline.json``). Every difference must be named by a
diagnostic the writer emitted. The pairs run in parallel in one session-scoped fixture.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from proof import continuation as cont
from proof import harness_loaders, loader, tools_dir
from tests.conftest import parallel_clis, require_loader
from trajconv.codecs import registry

#: every harness whose loader module has the contract (a new codec's joins by itself)
HARNESSES = cont.continuable(sorted({*harness_loaders(), *registry.names()}))
PAIRS = list(itertools.product(cont.sources(HARNESSES), repeat=2))


#: codes that name a missing item the source's model saw but no harness lost: a harness's own
#: second copy of a result, and the calls and results a text-only history shows the user only
TEXT_ONLY_CODES = ("repeated-result-replayed", "untranslated-tool-call", "untranslated-tool-result")
#: codes that name a missing item whose text reached the model all the same (joined with the
#: one before it), or a prompt the target's CLI takes for one of its commands (Gemini CLI's
#: ``/`` and ``?``) and so cannot send
SENT_OTHERWISE_CODES = ("untranslated-message-boundary", "user-read-as-command")


def _cpu_seconds(target: str) -> int:
    """CPU seconds one continued turn costs in the target's CLI (its loader module's
    ``CONTINUE_CPU_SECONDS``, measured with ``/usr/bin/time``; most node CLIs 2 to 5)."""
    return int(getattr(loader(target), "CONTINUE_CPU_SECONDS", 3))


@pytest.fixture(scope="session")
def continued() -> dict[tuple[str, str], cont.Comparison | BaseException]:
    for name in HARNESSES:
        require_loader(cont.find_cli(name, tools_dir()), name)

    def run(pair: tuple[str, str]) -> cont.Comparison | BaseException:
        try:
            return cont.check_pair(*pair)[0]
        except Exception as exc:  # reported per pair by the test below
            return exc

    # the costliest targets first, so that none is left running alone at the end; two CLIs
    # per core this process has (the node CLIs mostly wait, Deep Agents and OpenCode use a
    # core while they start), the cores shared with the other xdist workers
    order = sorted(PAIRS, key=lambda pair: -_cpu_seconds(pair[1]))
    with ThreadPoolExecutor(max_workers=parallel_clis()) as pool:
        return dict(zip(order, pool.map(run, order), strict=True))


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[f"{s}-to-{t}" for s, t in PAIRS])
def test_continued_turn_sees_the_source_conversation(
    continued: dict[tuple[str, str], Any], source: str, target: str
) -> None:
    result = continued[(source, target)]
    if isinstance(result, BaseException):
        raise result
    assert result.prompt_found, "the new prompt is not the last user message"
    assert result.total > 0
    assert not result.unexplained, [d.to_json() for d in result.unexplained]
    # every user message, tool call and tool result of the source reached the model (a
    # harness's own second copy of a result, which its model also saw, is not one; nor is a
    # call or result a text-only target keeps for the user but cannot send: Aider)
    missing = {
        d.kind
        for d in result.differences
        if d.what == "missing" and d.named_by not in (*TEXT_ONLY_CODES, *SENT_OTHERWISE_CODES)
    }
    assert not missing & {"user", "tool-call", "tool-result", "assistant"}
    assert not [d for d in result.differences if d.what == "extra"]


def _still_different(source: str) -> dict[str, int]:
    """What a source's conversation still differs in, in the targets that pin it (besides the
    failures the model saw flagged, counted from the baseline): its loader module's
    ``STILL_DIFFERENT``, each difference with the code that names why."""
    codes = getattr(loader(source), "STILL_DIFFERENT", None)
    assert isinstance(codes, dict), f"proof/loaders/{source}.py defines no STILL_DIFFERENT"
    return dict(codes)


#: the targets whose writers this test holds to (``PINS_DIFFERENCES`` in their loader module;
#: a newer codec's target rows are its own tests')
PINNING_TARGETS = [
    t for t in cont.sources(HARNESSES) if getattr(loader(t), "PINS_DIFFERENCES", False)
]


def _flagged(source: str) -> int:
    """Tool results the source's model was told had failed (an error flag in its request),
    each counted once (Gemini CLI sends some twice)."""
    base = cont.load_baseline(source)
    items = cont.harness_module(source).request_items(base["request"])  # type: ignore[union-attr]
    return len({i["call_id"] for i in items if i["kind"] == "tool-result" and i["error"] is True})


def test_what_the_pairs_still_differ_in(continued: dict[tuple[str, str], Any]) -> None:
    """The differences left into the older targets, each named by the code that says why."""
    named = {
        pair: r.named_codes() for pair, r in continued.items() if not isinstance(r, BaseException)
    }
    assert PINNING_TARGETS
    assert _flagged("claude") == 2 and _flagged("opencode") == 0  # the count is the baseline's
    for source in cont.sources(HARNESSES):
        codes = _still_different(source)
        flagged = _flagged(source)
        for target in PINNING_TARGETS:
            # and what it differs in in one target only (``STILL_DIFFERENT_IN``)
            want = {**codes, **getattr(loader(source), "STILL_DIFFERENT_IN", {}).get(target, {})}
            # a target that keeps what it does not send names it its own way
            for code, instead in getattr(loader(target), "NAMES_INSTEAD", {}).items():
                if code in want:
                    want[instead] = want.pop(code)
            if flagged:  # a Chat Completions target sends the text alone
                want["untranslated-tool-status"] = flagged
            assert named[(source, target)] == want, (source, target)
