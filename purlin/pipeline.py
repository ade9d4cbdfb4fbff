"""The default lowering pipeline, in the order passes apply."""

FULL_PIPELINE: tuple[str, ...] = (
    "coll-expand",
    "convert-coll-to-snac",
    "snac-verify",
    "convert-snac-to-atom",
)

# The lowest level the simulator executes: the plan a runtime runs.
LOWEST_LEVEL = "plan"


def pipeline_spec(passes: tuple[str, ...] = FULL_PIPELINE) -> str:
    return ",".join(passes)
