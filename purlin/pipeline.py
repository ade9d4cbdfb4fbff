"""The default lowering pipeline, in the order passes apply."""

FULL_PIPELINE: tuple[str, ...] = ("coll-expand", "convert-coll-to-snac", "snac-verify")

# The lowest level the simulator executes.
LOWEST_LEVEL = "snac"


def pipeline_spec(passes: tuple[str, ...] = FULL_PIPELINE) -> str:
    return ",".join(passes)
