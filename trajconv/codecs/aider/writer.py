"""Write a Snapshot as an Aider ``.aider.chat.history.md`` (facts: ``layout`` and README).

What Aider's history holds is text: what the user typed (``#### ``), the model's answers,
and Aider's own output (``> ``), which it shows but never sends to the model again. So:

* user and assistant records are written as Aider writes them (``InputOutput.user_input``
  and ``ai_output``), and ``--restore-chat-history`` sends them to the model;
* observation records become ``> `` lines, as Aider's own output;
* a tool call and its result are kept for the user as ``> `` lines (the command and what it
  printed) but the model is not sent them: ``untranslated-tool-call`` and
  ``untranslated-tool-result``; reasoning and system text are left out
  (``untranslated-reasoning``, ``untranslated-system``);
* the run header is the session's start: an Aider source's own (from its session id), else
  ``created_at`` in UTC, where Aider writes local time (``untranslated-time``); a session
  without a start gets none (Aider needs none) and an id from its first line
  (``ids-derived``). The later run headers of an Aider source are not kept.

The export's ``prepare.py`` is the generic one whose default ``--home`` is the session's
project folder (``--cwd``): it installs the history there and refuses to replace one.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from trajconv.codecs.aider import layout
from trajconv.codecs.base import ExportFile, ExportPlan
from trajconv.codecs.common import name_unheld, work_folder
from trajconv.codecs.export import generic_prepare_script
from trajconv.errors import RefusedError
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Snapshot
from trajconv.snapshot.spool import record_dicts

_MAX_SHOWN = 4000
"""Characters of a tool result kept in its ``> `` lines."""


def _user(text: str) -> str:
    lines = text.splitlines() or ["<blank>"]
    joined = "  \n#### ".join(lines)
    return f"\n#### {joined}  \n"


def _answer(text: str) -> str:
    return "\n" + text.strip() + "\n\n"


def _shown(text: str) -> str:
    """Text as Aider's own output: every line a ``> `` line with a hard break."""
    return "".join(
        f"> {line.strip()}  \n" if line.strip() else ">  \n" for line in text.splitlines()
    )


def plan(
    snapshot: Snapshot, *, allow_lossy: bool = False, cwd: str | None = None, **_options: Any
) -> ExportPlan:
    diags = Diagnostics()
    # nothing needs pairs and a history may end with what the user typed: Aider restores it
    workdir = work_folder(snapshot, "aider", cwd)
    own = snapshot.source.harness == "aider"
    parts: list[str] = []
    start = snapshot.session.created_at
    stamp = layout.stamp_of(snapshot.session.id) if own else None
    if stamp is None and start is not None:
        moment = datetime.fromisoformat(start.replace("Z", "+00:00"))
        stamp = moment.strftime("%Y-%m-%d %H:%M:%S")
        diags.add("untranslated-time", "run header in UTC (Aider writes local time)")
    if stamp is not None:  # the first run's start, which the session id is made of
        parts.append(f"\n{layout.HEADER}{stamp}\n\n")
    previous = said = None  # the last kind written; the last of user and assistant
    for r in record_dicts(snapshot.records):
        rid, kind = r["id"], r["kind"]
        if r.get("time") is not None:  # the history keeps no time but a run's start
            diags.add("untranslated-time", rid)
        if r.get("model") is not None and not own:  # Aider names its model in its banner only
            diags.add("untranslated-model", rid)
        if kind == "user":
            parts.append(_user(r["text"]))
        elif kind == "assistant":
            if said == "assistant":  # Aider sends the lines between two prompts as one answer
                diags.add("untranslated-message-boundary", rid)
            parts.append(_answer(r["text"]))
        elif kind == "observation":
            if previous == "observation":  # a blank line keeps two runs of output apart
                parts.append("\n")
            parts.append(_shown(r["text"]))
        elif kind == "tool-call":
            call = r["call"]
            shown = json.dumps(call["arguments"], ensure_ascii=False)
            parts.append(_shown(f"{call['name']} {shown}"))
            diags.add("untranslated-tool-call", rid)
        elif kind == "tool-result":
            res = r["result"]
            output = res["output"]
            if len(output) > _MAX_SHOWN:
                output = output[:_MAX_SHOWN] + f"\n… {len(res['output']) - _MAX_SHOWN} more"
            parts.append(_shown(output))
            diags.add("untranslated-tool-result", rid)
        elif kind == "reasoning":
            diags.add("untranslated-reasoning", rid)
        else:
            diags.add("untranslated-system", rid)
        previous = kind
        if kind in ("user", "assistant"):
            said = kind
        elif kind in ("observation", "tool-call", "tool-result"):
            said = None  # its "> " lines end the answer before them
    session = snapshot.session
    for field in ("created_at", "updated_at"):
        if getattr(session, field) is not None:
            diags.add("untranslated-time", field)
    if session.model is not None and not own:
        diags.add("untranslated-model", "session model")
    if session.parent_session_id is not None:
        diags.add("untranslated-parent-session", "parent_session_id")
    # the history holds no cwd: it is the folder the file is in (wherever prepare.py puts it)
    diags.add("untranslated-cwd", "the repository is the history's folder")
    name_unheld(diags, session, {"untranslated-title": "title", "untranslated-branch": "branch"})
    data = "".join(parts).encode("utf-8")
    first = next((line for line in data.decode("utf-8").splitlines() if line.strip()), None)
    if first is None:
        raise RefusedError("refusing to write aider: nothing of the session is text Aider holds")
    session_id, derived = layout.id_of_first_line(first[:4096])
    if derived:
        diags.add("ids-derived", "session id from the history's first line")
    script = generic_prepare_script()
    anchor = 'default=Path.home(), help="home to install into"'
    if anchor not in script:  # the template changed: fail loudly rather than install in ~
        raise RuntimeError("prepare template has no --home default anchor")
    script = script.replace(
        anchor, f'default=Path({str(Path(workdir))!r}), help="the repository to install into"', 1
    )
    return ExportPlan(
        session_id=session_id,
        files=[ExportFile(f"home/{layout.HISTORY}", data, 0o644)],
        session_paths=[layout.HISTORY],
        diagnostics=diags.to_models(),
        prepare_script=script,
        notes=[
            f"prepare.py installs {layout.HISTORY} into {workdir} (--home DIR for another "
            "folder); run the resume command there"
        ],
        try_home=None,
    )
