"""Tests mirror the package tree (tests/python/coll tests purlin/coll, ...).
This directory holds what several of them share (collective_cases), and pytest
puts the directory of a conftest on sys.path, so every test can import it."""
