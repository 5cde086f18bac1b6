"""docs/formats/ is generated from the registry: the committed pages are the current ones."""

from __future__ import annotations

from tests.helpers import REPO
from trajconv.codecs import formats, registry


def test_the_committed_format_pages_are_current() -> None:
    folder = REPO / "docs" / "formats"
    wanted = formats.pages()
    assert sorted(p.name for p in folder.glob("*.md")) == sorted(wanted)
    stale = [name for name, text in wanted.items() if (folder / name).read_text("utf-8") != text]
    assert not stale, f"run trajconv codecs --write-docs docs/formats: {stale} are stale"


def test_every_codec_has_a_page_with_its_options_and_diagnostics() -> None:
    pages = formats.pages()
    for codec in registry.all_codecs():
        page = pages[f"{codec.name}.md"]
        assert all(o.flag(codec.name) in page for o in codec.write_options)
        assert all(f"`{code}`" in page for code in formats.diagnostic_codes(codec))
