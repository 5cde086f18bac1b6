"""Pi coding agent (``pi`` CLI, npm ``@mariozechner/pi-coding-agent``) codec:
``~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl``, a JSONL tree of entries.
"""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec, WriteOption

CODEC = LazyCodec(
    aliases=("pi-coding-agent", "pi-agent"),
    description="Pi coding agent: sessions/--<cwd>--/<time>_<uuid>.jsonl (an id/parentId tree)",
    package=__name__,
    homes=(HomeSpec(".pi/agent", "Pi coding agent", env=("PI_CODING_AGENT_DIR",)),),
    capabilities=Capabilities(
        subagents=False, reasoning=True, tool_status=True, exit_code=False, images=True
    ),
    write_options=(
        WriteOption(
            "provider",
            "the provider the assistant messages name (pi replays reasoning as reasoning only "
            "to that provider and model); default: a pi source's own, else the source harness",
            default=None,
        ),
        WriteOption(
            "model", "the model of assistant messages whose record names none", default=None
        ),
    ),
    resume=("pi", "--session", "{session}"),
)
