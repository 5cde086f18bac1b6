"""fx (vercel-labs/fx) codec: ``~/.fx/sessions/<id>/`` in every layout fx has written.

Format facts and sources: ``codecs/fx/README.md``; the codec's README.md beside this file
states its input contract, what the reader does not project and what the writer cannot hold.
"""

from trajconv.codecs.base import LazyCodec

CODEC = LazyCodec(
    name="fx",
    aliases=("vercel-fx", "fx-cli"),
    description="Vercel fx: ~/.fx/sessions/<id>/ (legacy schema 1/2, event_log_v1, schema 4)",
    package=__name__,
)
