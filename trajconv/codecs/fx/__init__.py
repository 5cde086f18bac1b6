"""fx (vercel-labs/fx) codec: ``~/.fx/sessions/<id>/`` in every layout fx has written."""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec, WriteOption

CODEC = LazyCodec(
    aliases=("vercel-fx", "fx-cli"),
    description="Vercel fx: ~/.fx/sessions/<id>/ (legacy schema 1/2, event_log_v1, schema 4)",
    package=__name__,
    write_options=(
        WriteOption("schema", "layout: 1 (legacy, default) or 4 (current)", choices=("1", "4")),
        WriteOption("model", "with schema 4: the model a session that names none is written with"),
    ),
    homes=(HomeSpec(".fx", "fx"),),
    capabilities=Capabilities(reasoning=True, tool_status=True),
    resume=("fx", "resume", "{session}"),
)
