"""Deep Agents Code (``deepagents-code``, CLI ``dcode``) codec.

Threads live in ``~/.deepagents/.state/sessions.db`` (LangGraph checkpoints).

Reading needs ``langgraph-checkpoint`` (LangGraph's serializer), imported lazily.
"""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec, WriteOption

CODEC = LazyCodec(
    aliases=("deepagents-code", "dcode", "deep-agents"),
    description=(
        "Deep Agents Code (dcode): LangGraph checkpoints in ~/.deepagents/.state/sessions.db"
    ),
    package=__name__,
    write_options=(
        WriteOption("agent_name", "the dcode agent the thread belongs to (default: agent)"),
        WriteOption(
            "reasoning",
            "keep reasoning as LangChain reasoning blocks (default) or drop it (some "
            "providers reject such blocks)",
            choices=("keep", "drop"),
        ),
    ),
    homes=(HomeSpec(".deepagents", "Deep Agents"),),
    capabilities=Capabilities(tool_status=True, exit_code=True),
    resume=("dcode", "-r", "{session}"),
)
