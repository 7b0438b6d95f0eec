"""Static checks of ``docker/`` (no Docker engine here): parsers, the checker, its tests."""
