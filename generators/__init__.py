"""Build-time generators: they write committed files and never run when kproto does.

Run from the repository root (this folder is not part of the installed package;
tests import it from the checkout):

- ``python -m generators.protocol --kafka-repo ...``: kproto/schemas/protocol/<api>.py
  from Kafka's JSON message definitions (read by ``generators.definitions``);
- ``python -m generators.log_records --kafka-repo ...``: kproto/schemas/group_records.py
  and metadata_records.py, the internal logs' record tables;
- ``python -m generators.c``: csrc/records_generated.c, the record schema in C
  (``generators.cjson`` adds the JSON writers; ``generators.cwalk`` is their shared walk).

The run-time fast paths, derived when kproto imports, are ``kproto.fastpath``.
"""
