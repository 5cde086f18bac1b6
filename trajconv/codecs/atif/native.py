"""ATIF's own vocabulary: validating a document and reading its content fields.

Validation is the standalone ``atif`` package's pydantic models (the same rules as
Harbor's ``harbor/models/trajectories``: ``extra="forbid"`` everywhere, sequential
``step_id``, agent-only fields, ``llm_call_count == 0`` rule, unique embedded
``trajectory_id``) plus the two rules Harbor 0.26.0 checks and ``atif`` 1.8.0 does not:
``schema_version`` is one of the published versions, and a result's ``source_call_id``
names a call of its own step even when that step has no calls.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from trajconv.codecs.atif import layout

Json = dict[str, Any]


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "document"


def problem(doc: Any, where: str = "") -> str | None:
    """The first reason ``doc`` is not a valid ATIF trajectory, or ``None``."""
    if not isinstance(doc, dict):
        return f"{where or 'document'}: an ATIF trajectory is a JSON object"
    version = doc.get("schema_version")
    if version not in layout.VERSIONS:
        known = ", ".join(layout.VERSIONS)
        return f"{where}schema_version: {version!r} is not a published ATIF version ({known})"
    import atif

    try:
        atif.Trajectory.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        return f"{where}{_where(tuple(first['loc']))}: {first['msg']}"
    for i, step in enumerate(doc["steps"]):
        found = _foreign_result(step, i, where)
        if found is not None:
            return found
    for k, sub in enumerate(doc.get("subagent_trajectories") or ()):
        found = problem(sub, f"{where}subagent_trajectories[{k}].")
        if found is not None:
            return found
    return None


def step_problem(step: Any, i: int, where: str = "") -> str | None:
    """The first reason step ``i`` of a document read a step at a time is not valid, as
    :func:`problem` names it for the whole document (``atif``'s step model, the
    trajectory's sequential ``step_id`` rule, a ``source_call_id`` of its own step)."""
    import atif

    try:
        atif.Step.model_validate(step)
    except ValidationError as exc:
        first = exc.errors()[0]
        return f"{where}{_where(('steps', i, *first['loc']))}: {first['msg']}"
    if step["step_id"] != i + 1:
        return (
            f"{where}document: Value error, steps[{i}].step_id={step['step_id']} is not "
            f"sequential; expected {i + 1}."
        )
    return _foreign_result(step, i, where)


def _foreign_result(step: Any, i: int, where: str) -> str | None:
    """The first result of step ``i`` whose ``source_call_id`` is not a call of that step."""
    calls = {c["tool_call_id"] for c in step.get("tool_calls") or ()}
    for j, res in enumerate((step.get("observation") or {}).get("results") or ()):
        ref = res.get("source_call_id")
        if ref is not None and ref not in calls:
            return (
                f"{where}steps[{i}].observation.results[{j}].source_call_id: {ref!r} is "
                f"not a tool call of step {step['step_id']}"
            )
    return None


def text_of(content: Any) -> tuple[str, list[Json]]:
    """A message or result content as text: a string as it is, a part list's text parts
    joined; also the parts that are not text (images, audio: ``{type, source}``)."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    texts = [p["text"] for p in content if p.get("type") == "text"]
    other = [p for p in content if p.get("type") != "text"]
    return "".join(texts), other


def status_of(extra: Any, step_extra: Any, call_id: str) -> tuple[bool | None, int | None]:
    """A result's success and exit status where a known producer left them in ``extra``.

    ATIF results have no status field (RFC 0001 ObservationResult). Known conventions:
    trajconv's own ``{"trajconv": {"ok", "exit_code"}}`` on the result (v1.7+) or, before
    results had an ``extra``, ``{"trajconv": {"results": {call_id: ...}}}`` on the step;
    Harbor's Claude Code adapter's ``tool_result_is_error``; its OpenCode adapter's
    ``error`` (a failed tool's message).
    """
    if not isinstance(extra, dict):
        ours = step_extra.get("trajconv") if isinstance(step_extra, dict) else None
        results = ours.get("results") if isinstance(ours, dict) else None
        found = results.get(call_id) if isinstance(results, dict) else None
        extra = {"trajconv": found} if isinstance(found, dict) else {}
    ours = extra.get("trajconv")
    if isinstance(ours, dict):
        ok = ours.get("ok")
        code = ours.get("exit_code")
        return (
            ok if isinstance(ok, bool) else None,
            code if type(code) is int else None,
        )
    flag = extra.get("tool_result_is_error")
    if isinstance(flag, bool):
        return (not flag), None
    if extra.get("error"):
        return False, None
    return None, None
