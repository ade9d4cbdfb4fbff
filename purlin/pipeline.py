"""The default lowering pipeline, in the order passes apply."""

FULL_PIPELINE: tuple[str, ...] = (
    "coll-expand",
    "convert-coll-to-snac",
    "snac-verify",
    "convert-snac-to-atom",
)


def pipeline_spec(passes: tuple[str, ...] = FULL_PIPELINE) -> str:
    return ",".join(passes)
