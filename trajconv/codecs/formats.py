"""``docs/formats/``, generated from the registry: one page per codec (what it reads and
writes, its homes, options, what its format holds, the diagnostics its code names) and an
index. ``trajconv codecs --write-docs DIR`` writes them; a test checks the committed pages
are current, so a new codec gets its page by registering."""

from __future__ import annotations

import ast
import importlib
from importlib import resources
from pathlib import Path

from trajconv.codecs import registry
from trajconv.codecs.base import Capabilities, Codec

INDEX = "README.md"
GENERATED = "Generated from the codec registry by `trajconv codecs --write-docs docs/formats`; "
GENERATED += "do not edit (edit the codec's `__init__.py` or README.md instead)."


def _package(codec: Codec) -> str | None:
    package = getattr(codec, "package", None)
    return package if isinstance(package, str) else None


def diagnostic_codes(codec: Codec) -> list[str]:
    """The registered diagnostic codes the codec's modules name (as string literals)."""
    from trajconv.snapshot.diagnostics import REGISTRY

    package = _package(codec)
    if package is None:
        return []
    found: set[str] = set()
    packages, done = [package], set()
    while packages:
        current = packages.pop()
        done.add(current)
        for entry in resources.files(current).iterdir():
            if not entry.name.endswith(".py"):
                continue
            for node in ast.walk(ast.parse(entry.read_text("utf-8"))):
                if isinstance(node, ast.Constant) and node.value in REGISTRY:
                    found.add(node.value)
                elif isinstance(node, ast.ImportFrom) and node.module:
                    shared = _shared_package(node.module)
                    if shared is not None and shared not in done:
                        packages.append(shared)
    return sorted(found)


def _shared_package(module: str) -> str | None:
    """The shared package of ``trajconv.codecs`` that ``module`` is in (one two codecs build
    on, such as ``opencode_lineage``, which is no codec itself), or None."""
    parts = module.split(".")
    if len(parts) < 3 or parts[:2] != ["trajconv", "codecs"]:
        return None
    name = ".".join(parts[:3])
    if parts[2] in registry.names():
        return None
    try:
        is_package = resources.files(name).is_dir()
    except (ModuleNotFoundError, TypeError):
        return None
    return name if is_package else None


def _claims_doc(codec: Codec) -> str:
    package = _package(codec)
    if package is None:
        return ""
    fn = getattr(importlib.import_module(f"{package}.layout"), "claims", None)
    return " ".join((fn.__doc__ or "").split()) if fn is not None else ""


def _holds(caps: Capabilities) -> str:
    names = {
        "subagents": "sub-agents",
        "reasoning": "reasoning",
        "tool_status": "a tool result's failure flag",
        "exit_code": "a command's exit status",
        "images": "images",
    }
    held = [label for field, label in names.items() if getattr(caps, field)]
    not_held = [label for field, label in names.items() if not getattr(caps, field)]
    return (
        f"holds: {', '.join(held) or 'none of these'}; does not hold: "
        f"{', '.join(not_held) or 'nothing of these'}; "
        + ("resumable (exports install into a home)" if caps.resumable else "a document format")
    )


def render_codec(codec: Codec) -> str:
    from trajconv.snapshot.diagnostics import REGISTRY

    abilities = [k for k, v in (("read", codec.can_read), ("write", codec.can_write)) if v]
    if codec.can_discover:
        abilities.append("discover")
    lines = [
        f"# {codec.name}",
        "",
        GENERATED,
        "",
        codec.description + ".",
        "",
        f"- aliases: {', '.join(f'`{a}`' for a in codec.aliases) or 'none'}",
        f"- can: {', '.join(abilities)}",
        "- homes: "
        + (
            "; ".join(
                f"`~/{h.folder}` ({h.label}"
                + (f"; or {', '.join(f'`${v}`' for v in h.env)}" if h.env else "")
                + ")"
                for h in codec.homes
            )
            or "none (a path is always given)"
        ),
        f"- what its format {_holds(codec.capabilities)}",
        f"- told from a path: {_claims_doc(codec) or '(no layout.claims)'}",
    ]
    if codec.write_options:
        lines += ["", "## Write options", ""]
        for option in codec.write_options:
            choices = f" (one of {', '.join(option.choices)})" if option.choices else ""
            lines.append(f"- `{option.flag(codec.name)}`: {option.help}{choices}")
    codes = diagnostic_codes(codec)
    if codes:
        lines += ["", "## Diagnostics its code names", "", "| code | side | meaning |"]
        lines.append("| --- | --- | --- |")
        lines += [f"| `{c}` | {REGISTRY[c].side} | {REGISTRY[c].meaning} |" for c in codes]
    package = _package(codec)
    if package is not None and package.startswith("trajconv.codecs."):
        readme = "../../" + package.replace(".", "/") + "/README.md"
        lines += ["", f"Input contract, what is not projected and sources: [README]({readme})."]
    return "\n".join(lines) + "\n"


def render_index(codecs: list[Codec]) -> str:
    lines = [
        "# Native formats",
        "",
        GENERATED,
        "",
        "| codec | what | page |",
        "| --- | --- | --- |",
    ]
    lines += [f"| `{c.name}` | {c.description} | [{c.name}.md]({c.name}.md) |" for c in codecs]
    lines += [
        "",
        "`trajconv codecs` lists the codecs installed here (another package can add one); "
        "`evidence/matrix.md` shows, pair by pair, what each conversion kept and what it "
        "named; `trajconv diagnostics` explains each code; `docs/design.md` describes the "
        "Snapshot every codec reads into and writes from.",
    ]
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """File name -> text of every generated page."""
    codecs = registry.all_codecs()
    out = {INDEX: render_index(codecs)}
    out.update({f"{c.name}.md": render_codec(c) for c in codecs})
    return out


def write(folder: Path) -> list[Path]:
    """Write every page into ``folder`` (and remove pages of codecs no longer registered)."""
    folder.mkdir(parents=True, exist_ok=True)
    wanted = pages()
    for old in folder.glob("*.md"):
        if old.name not in wanted:
            old.unlink()
    written = []
    for name, text in wanted.items():
        (folder / name).write_text(text, "utf-8")
        written.append(folder / name)
    return written
