"""Fixtures for interoperability tests with third-party L2TP daemons."""
