"""The semantic layer: the coll dialect (named collectives and the naming
layouts they expand to), the layout semantics, coll-expand, the numpy
reference of every collective."""
