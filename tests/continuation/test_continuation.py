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

from tests.conftest import require_loader
from trajconv.codecs import registry
from trajconv.loaders import LOADERS, tools_dir
from trajconv.loaders import continuation as cont

#: every harness whose loader module has the contract (a new codec's joins by itself)
HARNESSES = cont.continuable(sorted({*LOADERS, *registry.names()}))
PAIRS = list(itertools.product(cont.sources(HARNESSES), repeat=2))


@pytest.fixture(scope="session")
def continued() -> dict[tuple[str, str], cont.Comparison | BaseException]:
    for name in HARNESSES:
        require_loader(cont.find_cli(name, tools_dir()), name)

    def run(pair: tuple[str, str]) -> cont.Comparison | BaseException:
        try:
            return cont.check_pair(*pair)[0]
        except Exception as exc:  # reported per pair by the test below
            return exc

    with ThreadPoolExecutor(max_workers=3) as pool:  # the CLIs mostly wait on startup
        return dict(zip(PAIRS, pool.map(run, PAIRS), strict=True))


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
    # harness's own second copy of a result, which its model also saw, is not one)
    missing = {
        d.kind
        for d in result.differences
        if d.what == "missing" and d.named_by != "repeated-result-replayed"
    }
    assert not missing & {"user", "tool-call", "tool-result", "assistant"}
    assert not [d for d in result.differences if d.what == "extra"]


def test_what_the_pairs_still_differ_in(continued: dict[tuple[str, str], Any]) -> None:
    """The differences left, each named: Grok's injected context entries and Copilot's
    <current_datetime> block are kept in artifacts, not records (context-not-projected)."""
    named = {
        pair: r.named_codes() for pair, r in continued.items() if not isinstance(r, BaseException)
    }
    assert {"grok", "copilot", "deepagents"} <= set(cont.sources(HARNESSES))
    for target in ("grok", "copilot", "deepagents"):
        assert named[("deepagents", target)] == {}
        assert named[("grok", target)] == {"context-not-projected": 2}
        assert named[("copilot", target)] == {"context-not-projected": 1}
