"""The heading of results/explore.md's whole-library section: written by
explore_library.py, kept as it is by explore_table.py."""
LIBRARY_SECTION = "## The whole library on one pool"
