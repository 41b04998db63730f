"""``kproto consume --capture FILE``: the records of the Produce and Fetch
exchanges in a pcap/pcapng (kproto.capture), in capture order.

A Produce request's records get their offsets from its response's
base_offset (without a captured response they keep the client's relative
offsets); a record seen twice (produced, then fetched, or fetched again) is
printed once, by (topic, partition, offset). Control batches are left out."""

from __future__ import annotations

import re
from typing import Iterator

from kproto.client.data import ConsumedRecord
from kproto.records import Record, TimestampType
from kproto.tools.console_format import PartitionState

#: the capture's timestamp type names back to Kafka's ids
TYPES = {name: value for value, name in TimestampType.NAMES.items()}


def capture_records(path: str, topic: str | None, include: str | None, partition: int | None,
                    start_ms: int | None, end_ms: int | None, filters) -> Iterator[tuple[str, int, ConsumedRecord,
                                                                                            PartitionState]]:
    from kproto.capture import exchanges
    seen: set[tuple[str, int, int]] = set()
    states: dict[tuple[str, int], PartitionState] = {}

    def wanted(t: str, p: int) -> bool:
        if topic is not None and t != topic:
            return False
        if include is not None and not re.fullmatch(include, t):
            return False
        return partition is None or p == partition

    for ex in exchanges(path):
        if ex.api_name == "Produce" and ex.request:
            answers = {}
            for t in (ex.response or {}).get("responses") or ():
                for p in t.get("partition_responses") or ():
                    if not p.get("error_code"):
                        answers[(t.get("name"), p["index"])] = p.get("base_offset", -1)
            parts = [(t.get("name") or ex.topic_names.get(t.get("topic_id")), p["index"], p.get("records"),
                      answers.get((t.get("name"), p["index"])))
                     for t in ex.request.get("topic_data") or () for p in t.get("partition_data") or ()]
        elif ex.api_name == "Fetch" and ex.response:
            parts = [(t.get("topic") or ex.topic_names.get(t.get("topic_id")), p["partition_index"],
                      p.get("records"), 0)
                     for t in ex.response.get("responses") or () for p in t.get("partitions") or ()]
        else:
            continue
        for t, p, batches, base in parts:
            if t is None or not batches or not wanted(t, p):
                continue
            state = states.setdefault((t, p), PartitionState())
            for batch in batches:
                if "records" not in batch or batch.get("control"):
                    continue
                magic2 = batch.get("magic") == 2
                for r in batch["records"]:
                    offset = r["offset"] + (base or 0)
                    if base is not None:
                        if (t, p, offset) in seen:
                            continue
                        seen.add((t, p, offset))
                    ts = r["timestamp"]
                    if (start_ms is not None and ts < start_ms) or (end_ms is not None and ts >= end_ms):
                        continue
                    rec = Record(offset, ts, r["key"], r["value"], tuple(tuple(h) for h in r["headers"]))
                    if filters.active and not filters.match(rec):
                        continue
                    yield t, p, ConsumedRecord(
                        rec, TYPES.get(batch.get("timestamp_type"), TimestampType.CREATE_TIME),
                        batch.get("partition_leader_epoch", -1) if magic2 else -1,
                        batch.get("producer_id", -1) if magic2 else -1,
                        batch.get("producer_epoch", -1) if magic2 else -1,
                        bool(batch.get("transactional")), batch.get("attributes", 0)), state
