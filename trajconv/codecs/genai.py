"""What the Gemini-lineage formats share (Gemini CLI and its fork Qwen Code): messages as
``@google/genai`` ``Content`` parts, a tool result as a ``functionResponse`` whose
``response`` is ``{"output": ...}`` or ``{"error": ...}``, the shell tool
``run_shell_command`` whose output names its exit status in an ``Exit Code: N`` line, and
the ``<state_snapshot>`` summary a compression keeps as a user message.

Facts: ``@google/gemini-cli`` 0.61.0 and ``@qwen-code/qwen-code`` 0.24.4 bundles (their
``coreToolScheduler`` ``convertToFunctionResponse``, ``shell.ts`` ``llmContent``,
``getCompressionPrompt``); each codec's README cites its own.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from trajconv.codecs.tool_calls import CallProjector
    from trajconv.snapshot.builder import EvidenceFields, SnapshotBuilder

#: the shell tool of both CLIs, whose output carries the exit status
SHELL = "run_shell_command"
#: the summary a compression writes, kept as a user message the model reads
SNAPSHOT = "<state_snapshot>"
_EXIT = re.compile(r"^Exit Code: (-?\d+)\s*$", re.MULTILINE)


def parts_of(content: Any) -> list[Any]:
    """A PartListUnion as a list of parts (a string is one text part)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, list):
        return [{"text": p} if isinstance(p, str) else p for p in content]
    return [content]


def result_of(response: Any) -> tuple[str, bool | None]:
    """``functionResponse.response`` -> (output text, ok from its shape)."""
    if isinstance(response, dict):
        if isinstance(response.get("output"), str):
            return response["output"], True
        if isinstance(response.get("error"), str):
            return response["error"], False
        text = orjson.dumps(response, option=orjson.OPT_SORT_KEYS).decode()
        return text, False if "error" in response else None
    if isinstance(response, str):
        return response, None
    return orjson.dumps(response).decode(), None


def exit_code(output: str) -> int | None:
    """``Exit Code: N`` of a shell tool's output."""
    match = _EXIT.search(output)
    return int(match.group(1)) if match else None


def add_function_call(
    b: SnapshotBuilder,
    fc: dict[str, Any],
    rid: str,
    call_id: str,
    *,
    time: str | None,
    turn: int | None,
    evidence: EvidenceFields,
) -> str:
    """The tool call record of a ``functionCall`` part (``{name, args}``; no args are
    ``{}``) as call ``call_id`` of the message ``rid``; its record id."""
    record = f"{rid}:call:{call_id}"
    args = fc.get("args") if fc.get("args") is not None else {}
    b.add_call(
        record, call_id, str(fc.get("name") or ""), args, time=time, turn=turn, evidence=evidence
    )
    return record


def answer_function_response(
    p: CallProjector,
    rid: str,
    call_id: str,
    fr: dict[str, Any],
    state: Any,
    *,
    time: str | None,
    evidence: EvidenceFields,
    code: int | None = None,
    code_decides: bool = False,
) -> None:
    """The tool result record ``<rid>:result:<call id>`` of a ``functionResponse`` part
    ``fr`` answering call ``call_id`` of the message ``rid`` (its call is
    ``<rid>:call:<call id>``, :func:`add_function_call`), whose tool call ended in ``state``.

    The output and ok are the response's (:func:`result_of`); the exit code is ``code`` when
    the record gives one elsewhere, else the shell tool's ``Exit Code: N`` line. A
    ``success`` state is ok and ``error`` or ``cancelled`` is not; with ``code_decides``
    (Gemini CLI) an exit code decides ok over ``success`` and when there is no state."""
    output, ok = result_of(fr.get("response"))
    if code is None and fr.get("name") == SHELL:
        code = exit_code(output)
    if state == "success":
        ok = True if code is None or not code_decides else code == 0
    elif state in ("error", "cancelled"):
        ok = False
    elif code is not None and code_decides:
        ok = code == 0
    p.answer(
        f"{rid}:result:{call_id}", call_id, ok, output, time=time, evidence=evidence, exit_code=code
    )
