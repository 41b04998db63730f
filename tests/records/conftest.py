"""Fixtures only the records tests use.

Record batches: codecs, bad input, the C walk and accelerator, compression.
"""
