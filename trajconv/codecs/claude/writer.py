"""Claude Code writer: Snapshot -> ``home/.claude/projects/<key>/<uuid>.jsonl``.

What the CLI needs to resume (``codecs/claude/README.md``, observed with
2.1.332): compact JSON lines, one ``parentUuid`` chain (``null`` only on the root), chain lines
with ``type``/``uuid``/``parentUuid``/``sessionId``/``message``; one content block per assistant
line, the lines of one model response sharing ``message.id``; every ``tool_use`` answered by a
``tool_result`` (the CLI silently drops an unanswered call's whole message). No ``entrypoint``:
sessions written with ``sdk-cli`` are hidden from the interactive picker.

Rules of this writer:

* line uuids and ``message.id`` are derived from the Snapshot id and record position
  (``ids-derived``); the session id is kept when it is a UUID;
* user text -> a user line with string content; assistant text -> a ``text`` block; tool
  calls -> ``tool_use`` (``input`` must be an object: anything else is wrapped as
  ``{"_raw": value}`` and named ``defaults-assumed``); a tool result -> a ``tool_result`` with
  ``is_error`` from ``ok`` and, for a non-zero exit status the text does not start with, the
  ``Exit code N`` heading the CLI itself writes on failed shell commands
  (``exit-status-in-text``: the Messages API has no exit status field);
* reasoning becomes a ``thinking`` block only with the signature the API gave for it, which
  only a Claude Code source has (read back from the source transcript kept in the Snapshot);
  any other reasoning is left out (``untranslated-reasoning``): a signature is never invented;
* system text -> a ``system`` line (``subtype: informational``), which the CLI keeps but does
  not send to the model (``untranslated-system``, except a Claude Code source's own system
  lines, which the model never saw); a Claude Code source's own user-role harness text
  (reminders, command echoes, task notifications) -> an ``isMeta`` user line, which the CLI
  sends to the model as it did; observations are ``untranslated-observation``;
* times are the source's; a record without one gets no ``timestamp`` (the CLI loads such lines).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from trajconv.codecs.base import (
    ExportFile,
    ExportPlan,
    Limits,
    dropped_code,
    exit_code_shown,
    home_folders,
)
from trajconv.codecs.claude import layout, native
from trajconv.codecs.common import open_write, spooled
from trajconv.codecs.jsonl import iter_file_objects, iter_objects
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Child, Snapshot
from trajconv.snapshot.spool import Spool

#: what the Messages API accepts as a ``tool_use`` id
_TOOL_ID = re.compile(r"^[A-Za-z0-9_-]{1,200}$")


def _dumps(value: Any) -> str:
    """Compact JSON with non-ASCII kept, as the CLI's ``JSON.stringify`` writes it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _signatures(snapshot: Snapshot) -> dict[tuple[str, int, str], str]:
    """``(artifact, line, json_path) -> signature`` of the thinking blocks of a Claude Code
    source, read from its transcript artifacts (only when it has reasoning records)."""
    if snapshot.source.harness != "claude":
        return {}
    wanted = {
        (r.evidence.artifact, r.evidence.line)
        for r in snapshot.records
        if r.kind == "reasoning" and r.evidence.native == "thinking"
    }
    found: dict[tuple[str, int, str], str] = {}
    for name in {a for a, _ in wanted}:
        art = next((a for a in snapshot.artifacts if a.name == name), None)
        blob = art.blob if art is not None else None
        if blob is None:
            continue
        whole = blob.whole_file  # the transcript copy, parsed a line at a time
        lines = (
            iter_file_objects(whole, name, Diagnostics(), Limits())
            if whole is not None
            else iter_objects(blob.read(), name, Diagnostics(), Limits())
        )
        for number, obj in lines:
            if (name, number) not in wanted:
                continue
            msg = obj.get("message")
            blocks = msg.get("content") if isinstance(msg, dict) else None
            for i, block in enumerate(blocks if isinstance(blocks, list) else []):
                sig = block.get("signature") if isinstance(block, dict) else None
                if isinstance(sig, str) and sig:
                    found[(name, number, f"$.message.content[{i}]")] = sig
    return found


class _Chain:
    """Chain lines written to a spool file as they are made; ids from the Snapshot."""

    def __init__(
        self,
        snapshot: Snapshot,
        sid: str,
        cwd: str,
        out: Any,
        agent: str | None = None,
        branch: str | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.sid = sid
        self.cwd = cwd
        self.out = out
        #: a sub-agent's transcript: its lines are a sidechain with its ``agentId``
        self.agent = agent
        self.parent: str | None = None
        self.n = 0
        self.message_id: str | None = None
        self.last_prompt: str | None = None
        self.branch = branch if agent is not None else snapshot.session.branch
        #: the earliest and latest ``timestamp`` written, and the model of the last assistant
        #: line: what the reader takes the session's times and model from
        self.first_time: str | None = None
        self.last_time: str | None = None
        self.model: str | None = None

    def _uuid(self, what: str) -> str:
        side = f"agent:{self.agent}:" if self.agent is not None else ""
        return str(
            uuid.uuid5(uuid.NAMESPACE_URL, f"trajconv:{self.snapshot.id}:claude:{side}{what}")
        )

    def line(self, kind: str, time: str | None, **fields: Any) -> None:
        self.n += 1
        uid = self._uuid(f"line:{self.n}")
        obj: dict[str, Any] = {
            "parentUuid": self.parent,
            "isSidechain": self.agent is not None,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.sid,
        }
        if self.branch:
            obj["gitBranch"] = self.branch
        if self.agent is not None:
            obj["agentId"] = self.agent
        obj["type"] = kind
        obj.update(fields)
        obj["uuid"] = uid
        if time is not None:
            obj["timestamp"] = time
            self.first_time = min(self.first_time or time, time)
            self.last_time = max(self.last_time or time, time)
        self.out.write((_dumps(obj) + "\n").encode())
        self.parent = uid
        if kind != "assistant":
            self.message_id = None

    def assistant(self, block: dict[str, Any], model: str | None, time: str | None) -> None:
        if self.message_id is None:
            self.message_id = "msg_trajconv_" + self._uuid(f"message:{self.n}").replace("-", "")
        stop = "tool_use" if block["type"] == "tool_use" else "end_turn"
        message: dict[str, Any] = {"id": self.message_id, "type": "message", "role": "assistant"}
        if model:
            message["model"] = model
            self.model = model
        message |= {"content": [block], "stop_reason": stop, "stop_sequence": None}
        self.line("assistant", time, message=message)

    def user(self, content: Any, time: str | None, **extra: Any) -> None:
        self.line("user", time, message={"role": "user", "content": content}, **extra)


def _tool_id(call_id: str, snapshot: Snapshot, ids: dict[str, str], diags: Diagnostics) -> str:
    if _TOOL_ID.match(call_id):
        return call_id
    if call_id not in ids:
        diags.add("ids-derived", "tool_use id")
        digest = uuid.uuid5(uuid.NAMESPACE_URL, f"trajconv:{snapshot.id}:tool:{call_id}")
        ids[call_id] = "toolu_" + digest.hex
    return ids[call_id]


def _result_text(rid: str, output: str, exit_code: int | None, diags: Diagnostics) -> str:
    """The text a result is written with: the ``Exit code N`` heading the CLI writes on a
    failed shell command heads it when the status is non-zero and the text lacks a heading
    (``exit-status-in-text``). A status the text cannot carry so (0, which the CLI never
    writes, or another heading already there) is ``untranslated-exit-code`` unless the text
    shows it as the source harness printed it."""
    if exit_code is None:
        return output
    head = native.EXIT_CODE.match(output)
    if head is None and exit_code != 0:
        diags.add("exit-status-in-text", rid)
        return f"Exit code {exit_code}\n{output}"
    shown = head is not None and int(head.group(1)) == exit_code
    if not shown and not exit_code_shown(output, exit_code):
        diags.add("untranslated-exit-code", rid)
    return output


def _sent_harness_text(rec: Any) -> bool:
    """A Claude Code source's user-role text the CLI wrote itself and sent to the model, which
    an ``isMeta`` user line makes it send again (observed with 2.1.332: an ``isMeta`` line is
    merged into the user message around it). Only text the CLI marks as its own
    (``<system-reminder>``, command echoes, task notifications, interrupt markers): a
    compaction summary or a transcript-only line stays a ``system`` line."""
    return rec.evidence.native == "user(harness)" and bool(native.HARNESS_TEXT.match(rec.text))


def _model(rec: Any, session_model: str | None, diags: Diagnostics) -> str | None:
    """An assistant line's model: the record's, else the session's (``model-assumed``)."""
    if rec.model is None and session_model:
        diags.add("model-assumed", rec.id)
    return rec.model or session_model


def _name_session_facts(snapshot: Snapshot, chain: _Chain, cwd: str, diags: Diagnostics) -> None:
    """Session facts the transcript cannot hold as they are. The reader takes the times from
    the earliest and latest line ``timestamp``, the model from the last assistant line; the
    transcript has no parent session (a sub-agent's transcript is written as a main one)."""
    session = snapshot.session
    for name, was, now in (
        ("created_at", session.created_at, chain.first_time),
        ("updated_at", session.updated_at, chain.last_time),
    ):
        if was != now:
            code = "untranslated-time" if was is not None else "timestamps-synthesized"
            diags.add(
                code,
                f"session {name} (the {'first' if name == 'created_at' else 'last'} record time)",
            )
    if session.model and session.model != chain.model:
        diags.add("untranslated-model", "session model (the last answer's model)")
    if session.parent_session_id:
        diags.add("untranslated-parent-session", "written as a main transcript")
    if session.cwd and session.cwd != cwd:
        diags.add("untranslated-cwd", "cwd (--cwd)")


@dataclass
class _Context:
    """What lowering a session's records needs, the same for a sub-agent's."""

    snapshot: Snapshot
    diags: Diagnostics
    model: str | None
    signatures: dict[tuple[str, int, str], str]
    own: bool
    ids: dict[str, str] = field(default_factory=dict)

    def tool_id(self, call_id: str) -> str:
        return _tool_id(call_id, self.snapshot, self.ids, self.diags)


def _lower(records: Iterable[Any], chain: _Chain, ctx: _Context, drop: set[str]) -> None:
    """One pass over ``records``, each written as the chain lines the CLI reads."""
    for rec in records:
        if rec.id in drop:
            ctx.diags.add(dropped_code(rec.kind), rec.id)
            continue
        if rec.kind == "user":
            if native.HARNESS_TEXT.match(rec.text):
                # e.g. a Harbor trajectory's <system-reminder> step: the model sees it as
                # written, the reader (as for the CLI's own lines) takes it for context
                ctx.diags.add("user-read-as-context", rec.id)
            chain.user(rec.text, rec.time)
            chain.last_prompt = rec.text
        elif rec.kind == "assistant":
            model = _model(rec, ctx.model, ctx.diags)
            chain.assistant({"type": "text", "text": rec.text}, model, rec.time)
        elif rec.kind == "reasoning":
            ev = rec.evidence
            sig = ctx.signatures.get((ev.artifact, ev.line or 0, ev.json_path or ""))
            if sig is None:
                ctx.diags.add("untranslated-reasoning", rec.id)
                continue
            thinking = {"type": "thinking", "thinking": rec.text, "signature": sig}
            chain.assistant(thinking, _model(rec, ctx.model, ctx.diags), rec.time)
        elif rec.kind == "tool-call":
            args = rec.call.arguments
            if not isinstance(args, dict):
                ctx.diags.add("defaults-assumed", rec.id)
                args = {"_raw": args}
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": ctx.tool_id(rec.call.id),
                "name": rec.call.name,
                "input": args,
            }
            chain.assistant(block, ctx.model, rec.time)
        elif rec.kind == "tool-result":
            res = rec.result
            if res.ok is None:
                ctx.diags.add("tool-status-assumed", rec.id)
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": ctx.tool_id(res.call_id),
                "content": _result_text(rec.id, res.output, res.exit_code, ctx.diags),
                "is_error": res.ok is False,
            }
            chain.user([result], rec.time)
        elif rec.kind == "system" and ctx.own and _sent_harness_text(rec):
            # the CLI's own user-role text (a reminder, a command echo, a task
            # notification) went to the model: it goes again as an isMeta user line
            chain.user(rec.text, rec.time, isMeta=True)
        elif rec.kind == "system":
            chain.line("system", rec.time, subtype="informational", content=rec.text, level="info")
            if not (ctx.own and (rec.evidence.native or "").startswith("system:")):
                # kept in the transcript, but the model no longer sees it (only the
                # CLI's own system lines never went to the model)
                ctx.diags.add("untranslated-system", rec.id)
        else:
            ctx.diags.add(f"untranslated-{rec.kind}", rec.id)


_AGENT_ID = re.compile(r"^agent-([A-Za-z0-9]{1,64})$")


def _agent_id(snapshot: Snapshot, child: Child, diags: Diagnostics) -> str:
    """A sub-agent's ``agentId``: a Claude Code source's own (its file is ``agent-<id>``),
    else derived from the Snapshot id and the child's (``ids-derived``), shaped as the
    CLI's: ``a`` and 16 hex digits."""
    own = _AGENT_ID.match(child.session.id)
    if snapshot.source.harness == "claude" and own:
        return own.group(1)
    diags.add("ids-derived", f"agentId of sub-agent {child.session.id}")
    digest = uuid.uuid5(uuid.NAMESPACE_URL, f"trajconv:{snapshot.id}:agent:{child.id}")
    return "a" + digest.hex[:16]


def _agent_meta(snapshot: Snapshot, child: Child, ctx: _Context) -> bytes:
    """The sub-agent's ``.meta.json``: a Claude Code source's own (kept in the Snapshot),
    with ``toolUseId`` naming the parent's call as written; else only ``toolUseId``."""
    meta: dict[str, Any] = {}
    if snapshot.source.harness == "claude":
        art = next(
            (
                a
                for a in snapshot.artifacts
                if a.name == f"{layout.SUBAGENTS}/{child.session.id}{layout.META_SUFFIX}"
            ),
            None,
        )
        data = art.read() if art is not None else None
        try:
            found = json.loads(data) if data is not None else {}
        except ValueError:
            found = {}
        meta = found if isinstance(found, dict) else {}
    if child.parent_call_id is not None:
        meta["toolUseId"] = ctx.tool_id(child.parent_call_id)
    else:
        meta.pop("toolUseId", None)
    return _dumps(meta).encode()


def plan(
    snapshot: Snapshot, *, allow_lossy: bool = False, cwd: str | None = None, **_options: Any
) -> ExportPlan:
    diags, drop, workdir, sid = open_write(snapshot, "claude", allow_lossy=allow_lossy, cwd=cwd)
    key = layout.project_key(workdir)
    session = snapshot.session
    ctx = _Context(
        snapshot, diags, session.model, _signatures(snapshot), snapshot.source.harness == "claude"
    )

    spool = Spool()
    path = spool.new_file("transcript.jsonl")
    with path.open("wb") as out:
        chain = _Chain(snapshot, sid, workdir, out)
        diags.add("ids-derived", "uuid / parentUuid / message.id")
        _lower(snapshot.records, chain, ctx, drop)
        if chain.last_prompt is not None:
            out.write(
                (
                    _dumps(
                        {
                            "type": "last-prompt",
                            "lastPrompt": chain.last_prompt,
                            "leafUuid": chain.parent,
                            "sessionId": sid,
                        }
                    )
                    + "\n"
                ).encode()
            )
        if session.title and session.title.strip() != (chain.last_prompt or "").strip():
            # a title of its own (one that is the last prompt is what the picker shows
            # without it, and then goes on following the last prompt as the session does)
            out.write(
                (
                    _dumps({"type": "ai-title", "aiTitle": session.title, "sessionId": sid}) + "\n"
                ).encode()
            )
        elif not session.title and chain.last_prompt is not None:
            diags.add("defaults-assumed", "title (the picker shows the last prompt)")
        elif not session.title:
            diags.add("title-missing", "ai-title")
        _name_session_facts(snapshot, chain, workdir, diags)

    rel = f"{layout.CONFIG}/{layout.PROJECTS}/{key}/{sid}{layout.SUFFIX}"
    files = [ExportFile(f"home/{rel}", spooled(path, spool))]
    session_paths = [rel]
    written: list[str] = []
    for child in snapshot.children:
        if child.session.parent_session_id != session.id:
            continue  # a sub-agent's own sub-agent: counted as untranslated-subagent
        agent = _agent_id(snapshot, child, diags)
        kid_path = spool.new_file(f"agent-{agent}.jsonl")
        with kid_path.open("wb") as out:
            kid = _Chain(snapshot, sid, child.session.cwd or workdir, out, agent, session.branch)
            # one id map: a call id the parent's lines derived is the meta's toolUseId
            _lower(child.records, kid, replace(ctx, model=child.session.model or ctx.model), set())
        base = f"{layout.CONFIG}/{layout.PROJECTS}/{key}/{sid}"
        if not written:
            session_paths.append(base)
        stem = f"{base}/{layout.SUBAGENTS}/{layout.AGENT_PREFIX}{agent}"
        files.append(ExportFile(f"home/{stem}{layout.SUFFIX}", spooled(kid_path, spool)))
        files.append(
            ExportFile(f"home/{stem}{layout.META_SUFFIX}", _agent_meta(snapshot, child, ctx))
        )
        written.append(child.id)
    return ExportPlan(
        session_id=sid,
        files=files,
        session_paths=session_paths,
        children_written=tuple(written),
        diagnostics=diags.to_models(),
        dir_modes=home_folders(layout.CONFIG),
        notes=[
            f"`claude --resume {sid}` finds the session from any directory; "
            f"the picker (`claude --resume`) lists it under {workdir}"
        ],
    )
