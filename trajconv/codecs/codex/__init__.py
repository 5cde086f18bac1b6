"""OpenAI Codex CLI codec: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``.

Format facts checked against the real CLI (``@openai/codex`` 0.171.0).
"""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec, WriteOption

CODEC = LazyCodec(
    aliases=("codex-cli", "openai-codex"),
    description="OpenAI Codex CLI: one rollout-*.jsonl per session under sessions/YYYY/MM/DD",
    package=__name__,
    write_options=(
        WriteOption(
            "model_provider",
            "the model_provider id you will resume with (default: openai, Codex's built-in "
            "provider)",
        ),
    ),
    homes=(HomeSpec(".codex", "Codex CLI", env=("CODEX_HOME",)),),
    capabilities=Capabilities(subagents=True, exit_code=True),
    resume=("codex", "resume", "{session}"),
)
