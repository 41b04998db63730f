"""Fixtures only the spark tests use.

kproto.spark: planning without Spark, and reading on real Spark.
"""
