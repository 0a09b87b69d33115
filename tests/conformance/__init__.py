"""Reusable conformance suites: every backend of a protocol runs the same tests."""
