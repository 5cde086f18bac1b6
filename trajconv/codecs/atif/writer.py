"""ATIF writer: Snapshot -> ``trajectory.json`` (``ATIF-v1.7`` unless asked otherwise).

One step per system text, user message and model inference, as RFC 0001 asks: an
agent step holds the inference's reasoning, text and tool calls, and every tool result is
attached to the step of its call (the only link ATIF has). ATIF results have no status:
a result's success flag and exit status go into the result's ``extra`` (v1.7+) or the
step's ``extra`` (older versions) under ``trajconv``, where standard consumers do not
look, so each is counted as ``untranslated-tool-status``. Session facts ATIF has no
field for (title, cwd, branch, times) go into the root ``extra`` (v1.1+; a v1.0 document
names each one it leaves out); the cwd is the one ``--cwd`` names, if given. A step has one
time and one model: a record joined into a step whose time or model is not its own is named
(``untranslated-time``, ``untranslated-model``; ``timestamps-synthesized``, ``model-assumed``
when it had none). Nothing is invented: a step without a time has no ``timestamp``; an
agent version the source does not know is ``"unknown"``, the value Harbor itself writes
(``defaults-assumed``).

ATIF is a document, not a live store: the export holds ``trajectory.json`` and no
``prepare.py``. Every written document is checked by :func:`native.problem` (the ``atif``
models plus Harbor's extra rules) before it is handed over.
"""

from __future__ import annotations

import json
from typing import Any

from trajconv.codecs.atif import layout, native
from trajconv.codecs.base import ExportFile, ExportPlan, name_joined_models
from trajconv.errors import RefusedError, UsageError
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Snapshot
from trajconv.snapshot.spool import record_dicts

Json = dict[str, Any]


def _version(requested: Any) -> str:
    if requested is None:
        return layout.DEFAULT_VERSION
    text = str(requested)
    version = text if text.startswith("ATIF-") else f"ATIF-v{text.lstrip('v')}"
    if version not in layout.VERSIONS:
        raise UsageError(
            f"--atif-version {text!r} is not a published ATIF version "
            f"({', '.join(v.removeprefix('ATIF-v') for v in layout.VERSIONS)})"
        )
    return version


class _Steps:
    """The steps, built in one pass over the records (held: a result joins its call's
    step, which may be far behind it)."""

    def __init__(self, minor: int, diags: Diagnostics) -> None:
        self.minor = minor
        self.diags = diags
        self.steps: list[Json] = []
        self.open: Json | None = None  # the agent step an inference is still adding to
        self.call_step: dict[str, int] = {}
        self.joined: list[tuple[int, Json]] = []  # (step index, record) of agent-step records

    def _new(self, source: str, time: str | None, message: str = "") -> Json:
        step: Json = {"step_id": len(self.steps) + 1}
        if time is not None:
            step["timestamp"] = time
        step["source"] = source
        step["message"] = message
        self.steps.append(step)
        return step

    def _agent(self, time: str | None, fresh: bool) -> Json:
        if self.open is None or fresh:
            self.open = self._new("agent", time)
        return self.open

    def text(self, kind: str, rec: Json) -> None:
        text, time = rec["text"], rec["time"]
        if kind in ("user", "system"):
            self.open = None
            self._new(kind, time, text)
        elif kind == "observation":
            self.open = None
            if self.minor < 2:  # observations on system steps arrived in 1.2
                self.diags.add("untranslated-observation", rec["id"])
                return
            step = self._new("system", time)
            step["observation"] = {"results": [{"source_call_id": None, "content": text}]}
        elif kind == "reasoning":
            cur = self.open
            fresh = cur is None or bool(cur["message"]) or "tool_calls" in cur
            step = self._agent(time, fresh)
            if "reasoning_content" in step:
                self.diags.add("untranslated-message-boundary", rec["id"])
                step["reasoning_content"] += "\n\n" + text
            else:
                step["reasoning_content"] = text
            self._model(step, rec)
            self._join(rec)
        else:  # assistant
            cur = self.open
            fresh = cur is None or bool(cur["message"]) or "tool_calls" in cur
            step = self._agent(time, fresh)
            step["message"] = text
            self._model(step, rec)
            self._join(rec)

    def _model(self, step: Json, rec: Json) -> None:
        if rec.get("model") and "model_name" not in step:
            step["model_name"] = rec["model"]

    def _join(self, rec: Json, index: int | None = None) -> None:
        """``rec`` went into a step (the newest unless ``index``) whose time and model it
        shares on re-reading: :meth:`name_step_facts` names where they are not its own."""
        self.joined.append((len(self.steps) - 1 if index is None else index, rec))

    def name_step_facts(self, agent_model: str | None) -> None:
        """ATIF keeps one time and one model per step (a step without a model is the
        agent's): a record joined into a step whose time or model is not its own, or that
        had none, is named."""
        for index, rec in self.joined:
            step = self.steps[index]
            if rec["time"] != step.get("timestamp"):
                code = "timestamps-synthesized" if rec["time"] is None else "untranslated-time"
                self.diags.add(code, rec["id"])
            if rec["kind"] in ("reasoning", "assistant"):
                model = step.get("model_name") or agent_model
                name_joined_models(self.diags, model, [(rec["id"], rec.get("model"))])

    def call(self, rec: Json) -> None:
        call = rec["call"]
        cur = self.open
        step = self._agent(rec["time"], cur is None or "observation" in cur)
        args = call["arguments"]
        if not isinstance(args, dict):
            self.diags.add("untranslated-tool-arguments", rec["id"])
            args = {"_raw": json.dumps(args, ensure_ascii=False)}
        step.setdefault("tool_calls", []).append(
            {"tool_call_id": call["id"], "function_name": call["name"], "arguments": args}
        )
        self.call_step[call["id"]] = len(self.steps) - 1
        self._join(rec)

    def result(self, rec: Json) -> None:
        res = rec["result"]
        index = self.call_step.get(res["call_id"])
        entry: Json = {"source_call_id": res["call_id"], "content": res["output"]}
        if index is None:  # its call is not in the Snapshot: a result without a link
            self.diags.add("unlinked-result", rec["id"])
            self.open = None
            if self.minor < 2:
                self.diags.add("untranslated-observation", rec["id"])
                return
            step = self._new("system", rec["time"])
            entry["source_call_id"] = None
        else:
            step = self.steps[index]
            if index != len(self.steps) - 1:
                self.diags.add("reordered-result", rec["id"])
            self._join(rec, index)
        status = {
            k: v for k, v in (("ok", res["ok"]), ("exit_code", res["exit_code"])) if v is not None
        }
        if status and entry["source_call_id"] is not None:
            self.diags.add("untranslated-tool-status", rec["id"])
            if self.minor >= 7:
                entry["extra"] = {"trajconv": status}
            else:
                results = step.setdefault("extra", {}).setdefault("trajconv", {})
                results.setdefault("results", {})[res["call_id"]] = status
        step.setdefault("observation", {"results": []})["results"].append(entry)


# The session facts ATIF keeps only in the root ``extra`` (v1.1+), with the code that names
# each one a v1.0 document leaves out.
SESSION_FACTS = {
    "title": "untranslated-title",
    "cwd": "untranslated-cwd",
    "branch": "untranslated-branch",
    "created_at": "untranslated-time",
    "updated_at": "untranslated-time",
    "parent_session_id": "untranslated-parent-session",
}


def _session_facts(snapshot: Snapshot, cwd: str | None) -> Json:
    """The session's facts ATIF has no field for; ``cwd`` is the one the user named."""
    s = snapshot.session
    facts = {
        "title": s.title,
        "cwd": cwd or s.cwd,
        "branch": s.branch,
        "created_at": s.created_at,
        "updated_at": s.updated_at,
        "parent_session_id": s.parent_session_id,
    }
    return {k: v for k, v in facts.items() if v is not None}


def _root_extra(snapshot: Snapshot, facts: Json) -> Json:
    return {
        "trajconv": {
            "snapshot_id": snapshot.id,
            "source": {"harness": snapshot.source.harness, "locator": snapshot.source.locator},
            "session": facts,
        }
    }


def plan(snapshot: Snapshot, *, allow_lossy: bool = False, **options: Any) -> ExportPlan:
    version = _version(options.get("version"))
    minor = layout.minor(version)
    diags = Diagnostics()
    steps = _Steps(minor, diags)
    for rec in record_dicts(snapshot.records):
        kind = rec["kind"]
        if kind == "tool-call":
            steps.call(rec)
        elif kind == "tool-result":
            steps.result(rec)
        else:
            steps.text(kind, rec)
    steps.name_step_facts(snapshot.session.model)
    if not steps.steps:
        raise RefusedError(
            "refusing to write atif: the session has no records, and ATIF needs at least one step"
        )
    agent: Json = {
        "name": snapshot.source.harness,
        "version": snapshot.source.harness_version or "unknown",
    }
    if snapshot.source.harness_version is None:
        diags.add("defaults-assumed", "agent.version")
    if snapshot.session.model:
        agent["model_name"] = snapshot.session.model
    doc: Json = {
        "schema_version": version,
        "session_id": snapshot.session.id,
        "agent": agent,
        "steps": steps.steps,
    }
    facts = _session_facts(snapshot, options.get("cwd"))
    if minor >= 1:
        doc["extra"] = _root_extra(snapshot, facts)
    else:
        for fact in facts:
            diags.add(SESSION_FACTS[fact], f"session.{fact}")
    found = native.problem(doc)
    if found is not None:  # a bug in this writer, never the user's input
        raise AssertionError(f"the ATIF writer produced an invalid trajectory: {found}")
    data = (json.dumps(doc, ensure_ascii=False, indent=2) + "\n").encode()
    return ExportPlan(
        session_id=snapshot.session.id,
        files=[ExportFile(layout.DOCUMENT, data, 0o644)],
        session_paths=[],
        diagnostics=diags.to_models(),
        installable=False,
        notes=[
            f"{version} document; ATIF is an exchange format, not a live store, so there is "
            f"nothing to install: convert it on with `trajconv convert --from atif --to "
            f"HARNESS {layout.DOCUMENT}`"
        ],
    )
