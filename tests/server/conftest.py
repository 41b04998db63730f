"""Fixtures only the server tests use.

The broker's parts: the group and transaction coordinators, the network layer and its
limits, security, and the broker's own rules (faults, descriptors, hostile clients,
DeleteRecords).
"""
