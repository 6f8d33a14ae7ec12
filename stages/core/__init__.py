"""Shared, small pieces: config, atomic I/O, validation, seeding, reports, verdicts."""
