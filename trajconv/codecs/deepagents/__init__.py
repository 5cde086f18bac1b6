"""Deep Agents Code (``deepagents-code``, CLI ``dcode``) codec.

Threads live in ``~/.deepagents/.state/sessions.db`` (LangGraph checkpoints).

Format facts and sources: ``codecs/deepagents/README.md``; the codec's own
README.md beside this file states its input contract and what it cannot carry.
Reading needs ``langgraph-checkpoint`` (LangGraph's serializer), imported lazily.
"""

from trajconv.codecs.base import LazyCodec

CODEC = LazyCodec(
    name="deepagents",
    aliases=("deepagents-code", "dcode", "deep-agents"),
    description=(
        "Deep Agents Code (dcode): LangGraph checkpoints in ~/.deepagents/.state/sessions.db"
    ),
    package=__name__,
)
