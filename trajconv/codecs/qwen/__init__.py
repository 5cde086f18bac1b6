"""Qwen Code codec: ``~/.qwen/projects/<encoded cwd>/chats/<id>.jsonl``."""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec, WriteOption

CODEC = LazyCodec(
    aliases=("qwen-code",),
    description="Qwen Code: chats/<id>.jsonl (ChatRecord JSONL) per project under ~/.qwen/projects",
    package=__name__,
    homes=(HomeSpec(".qwen", "Qwen Code", env=("QWEN_RUNTIME_DIR", "QWEN_HOME")),),
    capabilities=Capabilities(subagents=True, reasoning=True, tool_status=True, exit_code=True),
    write_options=(
        WriteOption(
            "model",
            "the model named on answers that name none (default: the session's model)",
            default=None,
        ),
    ),
    resume=("qwen", "--resume", "{session}"),
)
