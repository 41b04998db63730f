"""Fixtures only the e2e tests use.

Real clients against a running broker end to end, the pytest plugin as a user meets it,
and the short soak.
"""
