"""The continuation comparison on request bodies (no CLI needed)."""

from __future__ import annotations

import pytest

from proof import continuation as cont
from proof import harness_loaders
from trajconv.codecs import registry

PROMPT = cont.PROMPT
#: every harness with a loader module or a codec (a codec with the contract joins by itself)
ALL = sorted({*harness_loaders(), *registry.names()})


def chat(*messages: dict[str, object]) -> dict[str, object]:
    return {"model": "m", "messages": [{"role": "system", "content": "sys"}, *messages]}


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text}


CALL = {
    "role": "assistant",
    "content": "Looking.",
    "reasoning_content": "think",
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"p": "."}'}}
    ],
}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "a.txt"}


def test_chat_items_in_order() -> None:
    items = cont.openai_items(chat(user("hi"), CALL, RESULT, {"role": "assistant"}))
    assert [i["kind"] for i in items] == [
        "system",
        "user",
        "reasoning",
        "assistant",
        "tool-call",
        "tool-result",
        "assistant",
    ]
    assert items[4]["arguments"] == {"p": "."}
    assert items[-1]["text"] == ""  # an empty assistant message is still seen


def test_responses_items() -> None:
    body = {
        "instructions": "sys",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
            {"type": "function_call", "name": "ls", "arguments": "not json", "call_id": "c1"},
            {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
        ],
    }
    items = cont.openai_items(body)
    assert [i["kind"] for i in items] == ["system", "user", "reasoning", "tool-call", "tool-result"]
    assert items[3]["arguments"] == {"_raw": "not json"}


def test_identical_requests_see_everything() -> None:
    body = chat(user("hi"), CALL, RESULT, user(PROMPT))
    items = cont.openai_items(body)
    result = cont.compare("grok", "grok", items, items, {})
    assert result.ok and (result.same, result.total) == (5, 5)


def test_missing_reasoning_needs_its_code() -> None:
    base = cont.openai_items(chat(user("hi"), CALL, RESULT, user(PROMPT)))
    without = {k: v for k, v in CALL.items() if k != "reasoning_content"}
    got = cont.openai_items(chat(user("hi"), without, RESULT, user(PROMPT)))
    bare = cont.compare("grok", "grok", base, got, {})
    assert not bare.ok and [(d.kind, d.what) for d in bare.unexplained] == [
        ("reasoning", "missing")
    ]
    named = cont.compare("grok", "grok", base, got, {"untranslated-reasoning": 1})
    assert named.ok and named.summary() == "model saw 4/5"
    assert named.named_codes() == {"untranslated-reasoning": 1}


def test_reasoning_is_compared_only_where_both_harnesses_replay_it() -> None:
    """Copilot sends no reasoning of its own sessions: a Copilot baseline has none, so a
    target's replayed reasoning is not an extra item, and a Copilot target need show none."""
    with_reasoning = cont.openai_items(chat(user("hi"), CALL, RESULT, user(PROMPT)))
    without = {k: v for k, v in CALL.items() if k != "reasoning_content"}
    plain = cont.openai_items(chat(user("hi"), without, RESULT, user(PROMPT)))
    assert cont.compare("copilot", "grok", plain, with_reasoning, {}).ok
    assert cont.compare("grok", "copilot", with_reasoning, plain, {}).ok
    extra = cont.compare("grok", "grok", plain, with_reasoning, {})
    assert [(d.kind, d.what) for d in extra.unexplained] == [("reasoning", "extra")]


def test_reasoning_shown_as_text_is_one_named_difference() -> None:
    """OpenCode sends another model's reasoning as assistant text joined with its step's
    text; a step without text gets it alone. Unnamed, that is a missing and a changed or
    extra item; named by the writer's ``reasoning-as-text``, it is one difference."""
    base = cont.openai_items(chat(user("hi"), CALL, RESULT, user(PROMPT)))
    without = {k: v for k, v in CALL.items() if k != "reasoning_content"}
    got = cont.openai_items(
        chat(user("hi"), {**without, "content": "thinkLooking."}, RESULT, user(PROMPT))
    )
    assert not cont.compare("grok", "opencode", base, got, {}).ok
    named = cont.compare("grok", "opencode", base, got, {"reasoning-as-text": 1})
    assert named.ok and named.summary() == "model saw 4/5"
    assert named.named_codes() == {"reasoning-as-text": 1}
    silent = {**CALL, "content": None}
    base = cont.openai_items(chat(user("hi"), silent, RESULT, user(PROMPT)))
    got = cont.openai_items(chat(user("hi"), {**without, "content": "think"}, RESULT, user(PROMPT)))
    alone = cont.compare("grok", "opencode", base, got, {"reasoning-as-text": 1})
    assert alone.ok and alone.summary() == "model saw 3/4"
    # the code names only what the target shows: a reasoning item it left out stays unnamed
    gone = cont.openai_items(chat(user("hi"), without, RESULT, user(PROMPT)))
    base = cont.openai_items(chat(user("hi"), CALL, RESULT, user(PROMPT)))
    assert not cont.compare("grok", "opencode", base, gone, {"reasoning-as-text": 1}).ok


def test_extra_and_changed_items_are_never_free() -> None:
    base = cont.openai_items(chat(user("hi"), CALL, RESULT, user(PROMPT)))
    changed = {**RESULT, "content": '{"raw": "a.txt"}'}
    got = cont.openai_items(
        chat(user("hi"), CALL, changed, {"role": "assistant", "content": None}, user(PROMPT))
    )
    result = cont.compare("grok", "grok", base, got, {"untranslated-message-boundary": 5})
    assert [(d.kind, d.what, d.named_by) for d in result.differences] == [
        ("tool-result", "text", None),
        ("assistant", "extra", None),
    ]
    assert not result.ok


def test_wrappers_split_into_core_and_context() -> None:
    stamp = "<current_datetime>2026-11-30T03:43:29.163+00:00</current_datetime>"
    base = cont.openai_items(chat(user(f"{stamp}\n\nhi"), user(f"{stamp}\n\n{PROMPT}")))
    got = cont.openai_items(
        chat(
            user("<user_query>\nhi\n</user_query>"),
            user(f"<user_query>\n{PROMPT}\n</user_query>"),
        )
    )
    bare = cont.compare("copilot", "grok", base, got, {})
    assert [(d.kind, d.what) for d in bare.differences] == [("user", "context")]
    assert cont.compare("copilot", "grok", base, got, {"context-not-projected": 1}).ok
    injected = cont.openai_items(chat(user("<user_info>\nOS\n</user_info>"), user(PROMPT)))
    plain = cont.openai_items(chat(user(PROMPT)))
    missing = cont.compare("grok", "copilot", injected, plain, {})
    assert [(d.kind, d.what) for d in missing.differences] == [("context", "missing")]
    # context that was a system record of the source: a writer that dropped or did not send it
    assert cont.compare("grok", "copilot", injected, plain, {"system-not-sent": 1}).ok
    assert not cont.compare("grok", "copilot", injected, plain, {"untranslated-exit-code": 1}).ok


def test_the_new_prompt_must_arrive() -> None:
    items = cont.openai_items(chat(user("hi")))
    assert not cont.compare("grok", "grok", items, items, {}).prompt_found


@pytest.mark.parametrize("harness", sorted(cont.sources(ALL)))
def test_stored_baseline_holds_the_source_conversation(harness: str) -> None:
    doc = cont.load_baseline(harness)
    items = cont.harness_module(harness).request_items(doc["request"])  # type: ignore[union-attr]
    earlier, found = cont.conversation(items, doc["prompt"])
    assert found
    snap = cont.read_fixture(harness)
    users = [r for r in snap.records if r.kind == "user"]
    calls = [r for r in snap.records if r.kind == "tool-call"]
    seen_calls = [i for i in earlier if i["kind"] == "tool-call"]
    assert [i["name"] for i in seen_calls] == [c.call.name for c in calls]  # type: ignore[union-attr]
    for u in users:  # every prompt of the fixture reached the model (inside any wrapper)
        assert any(u.text in i["text"] for i in earlier if i["kind"] == "user")  # type: ignore[union-attr]


def test_an_error_field_is_held_to_the_source_record() -> None:
    """No error field (Chat Completions) and ``is_error: false`` tell the model the same; a
    target that has the field must set it as the source recorded the call."""

    def result(error: bool | None) -> list[dict[str, object]]:
        return [
            {"kind": "tool-result", "call_id": "c", "text": "ok", "error": error},
            {"kind": "user", "text": PROMPT},
        ]

    def whats(base: bool | None, got: bool | None, failed: frozenset[str]) -> list[str]:
        return [
            d.what
            for d in cont.compare(
                "grok", "grok", result(base), result(got), {}, failed=failed
            ).differences
        ]

    ok, failed = frozenset(), frozenset({"c"})
    assert whats(None, False, ok) == []
    assert whats(None, True, failed) == []
    assert whats(None, True, ok) == ["error"]  # a failure the source never recorded
    assert whats(None, False, failed) == ["error"]  # the target hides a recorded failure
    assert whats(True, None, failed) == ["error"]  # the target API cannot show it
    assert whats(False, None, ok) == []


def test_two_answers_joined_are_one_difference_each_boundary() -> None:
    """A target that sends two consecutive answers as one: unnamed, the first differs in text
    and the second is missing; named by the writer's one ``untranslated-message-boundary``,
    that is one difference. A text that is not exactly the two joined stays a difference."""
    first, second = (
        {"role": "assistant", "content": "One."},
        {"role": "assistant", "content": "Two."},
    )
    base = cont.openai_items(chat(user("hi"), first, second, user(PROMPT)))
    joined = cont.openai_items(
        chat(user("hi"), {"role": "assistant", "content": "One.\n\nTwo."}, user(PROMPT))
    )
    assert [
        (d.kind, d.what) for d in cont.compare("grok", "grok", base, joined, {}).unexplained
    ] == [("assistant", "missing")]
    named = cont.compare("grok", "grok", base, joined, {"untranslated-message-boundary": 1})
    assert named.ok and named.named_codes() == {"untranslated-message-boundary": 1}
    changed = cont.openai_items(
        chat(user("hi"), {"role": "assistant", "content": "One. Two! Three."}, user(PROMPT))
    )
    other = cont.compare("grok", "grok", base, changed, {"untranslated-message-boundary": 1})
    assert not other.ok
