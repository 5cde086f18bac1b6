"""Aider (``aider`` CLI, PyPI ``aider-chat``) codec: the ``.aider.chat.history.md`` Markdown
history Aider keeps in the repository it runs in, written back as the same file.

Format facts and sources: the README.md beside this file (its input contract, what the
reader does not project and what the writer cannot hold).
"""

from trajconv.codecs.base import Capabilities, LazyCodec

CODEC = LazyCodec(
    name="aider",
    aliases=("aider-chat",),
    description="Aider: .aider.chat.history.md in the repository (Markdown, text only)",
    package=__name__,
    # no home: the history is a file of each repository (discover takes --home DIR)
    homes=(),
    capabilities=Capabilities(),
)
