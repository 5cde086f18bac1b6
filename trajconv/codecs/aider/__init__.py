"""Aider (``aider`` CLI, PyPI ``aider-chat``) codec: the ``.aider.chat.history.md`` Markdown
history Aider keeps in the repository it runs in, written back as the same file.
"""

from trajconv.codecs.base import Capabilities, LazyCodec

CODEC = LazyCodec(
    aliases=("aider-chat",),
    description="Aider: .aider.chat.history.md in the repository (Markdown, text only)",
    package=__name__,
    # no home: the history is a file of each repository (discover takes --home DIR)
    homes=(),
    capabilities=Capabilities(),
    resume=("aider", "--restore-chat-history"),
)
