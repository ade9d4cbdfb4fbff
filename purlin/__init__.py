"""purlin: an IR toolkit and runtime for GPU collectives inside one server."""

__version__ = "0.1.0"
