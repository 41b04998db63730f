"""Write the record tables of Kafka's internal logs from its JSON definitions.

The companion of kproto.schemas.generate (same folding, same rendering), for
the ``data``/``metadata`` messages that are not requests or responses:

* kproto/schemas/group_records.py: ``__consumer_offsets`` record types 3-15
  (KIP-848 consumer groups, KIP-932 share groups; group-coordinator/...),
  and ``__share_group_state`` records (share-coordinator/...);
* kproto/schemas/metadata_records.py: KRaft's ``__cluster_metadata`` record
  types (metadata/src/main/resources/common/metadata/*.json) and the KRaft
  control records (LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters).

Record types 0-2 (classic offsets and groups) stay hand-written in
kproto/schemas/consumer_offsets.py, which registers these. Run::

    python -m kproto.schemas.generate_records --kafka-repo /path/to/apache/kafka.git [--check]
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

from kproto.schemas.definitions import from_json, snake, strip_comments, versions_of
from kproto.schemas.generate import (
    GENERATED, _q, fold, import_list, struct_blocks, used_scalars, write_or_check,
)

HERE = Path(__file__).resolve().parent
GROUPS = "group-coordinator/src/main/resources/common/message"
SHARES = "share-coordinator/src/main/resources/common/message"
METADATA = "metadata/src/main/resources/common/metadata"
CLIENT = "clients/src/main/resources/common/message"
# KRaft control records: ControlRecordType ids (clients/.../record/ControlRecordType.java).
CONTROL = {"LeaderChangeMessage": 2, "SnapshotHeaderRecord": 3, "SnapshotFooterRecord": 4,
           "KRaftVersionRecord": 5, "VotersRecord": 6}


def _git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def load(repo: str, ref: str, folder: str) -> dict[str, dict]:
    out = {}
    for path in _git(repo, "ls-tree", "--name-only", f"{ref}:{folder}").split():
        if path.endswith(".json"):
            out[path[:-5]] = strip_comments(_git(repo, "show", f"{ref}:{folder}/{path}"))
    return out


def message_block(data: dict, used: set) -> tuple[str, list[str]]:
    """(constant name, blocks): ``NAME = Message(Struct(...), valid, flexible)``."""
    versions = versions_of(data["validVersions"])
    root, structs = fold({v: from_json(data, v) for v in versions}, data)
    const = snake(data["name"]).upper()
    used.add(const)
    wrap = ("Message(Struct(", f"), {_q(data['validVersions'])}, {_q(data['flexibleVersions'])})")
    return const, struct_blocks(root, structs, const, used, max(versions), wrap)


def render(doc: str, messages: list[dict], tail: str) -> str:
    used: set = set()
    blocks, consts = [], {}
    for data in messages:
        const, b = message_block(data, used)
        consts[data["name"]] = const
        blocks += b
    body = "\n\n".join(blocks)
    types = used_scalars(body)
    code = (f'"""{doc}\n\n{GENERATED}_records; do not edit: fix the generator and re-run it.\n"""\n\n'
            + ("import uuid\n\n" if "uuid.UUID(" in body else "")
            + f"from kproto.schemas.message import (\n{import_list(types + (['ArrayOf'] if 'ArrayOf(' in body else []) + ['Field', 'Message', 'Struct'])}\n)\n\n"
            + body + "\n\n" + tail.format(**consts) + "\n")
    compile(code, "generated", "exec")
    return code


GROUP_DOC = """__consumer_offsets record types 3-15 and __share_group_state records, as Kafka defines them.

    key   => version int16 (= the record type), then the key struct
    value => version int16, then the value struct (null value = tombstone)

    3-8    KIP-848 consumer groups: group metadata, subscribed-topic metadata,
           member metadata, target assignment (metadata, member), current assignment
    9-15   KIP-932 share groups: the same set, plus share-group state partition metadata
    __share_group_state: ShareSnapshot (key 0), ShareUpdate (key 1)

Types 0-2 are in kproto.schemas.consumer_offsets, which registers these.
Kafka 4.0 added type 16 (consumer-group regular expressions, written by hand
in consumer_offsets from a later tree) and newer Kafka the KIP-1071
streams-group records, whose definitions were still changing upstream
("subject to non-backwards-compatible changes"); they are not here.

doc-ref: group-coordinator/src/main/resources/common/message/*.json and
share-coordinator/src/main/resources/common/message/*.json (apache/kafka trunk 2024-10-25)."""

GROUP_TAIL = '''#: record type (key version) -> (name, key message, value message)
RECORD_TYPES = {{
{rows}
}}

#: __share_group_state: key version -> (name, key message, value message)
SHARE_STATE_TYPES = {{
    0: ("ShareSnapshot", {ShareSnapshotKey}, {ShareSnapshotValue}),
    1: ("ShareUpdate", {ShareUpdateKey}, {ShareUpdateValue}),
}}'''

METADATA_DOC = """KRaft's __cluster_metadata records and control records, as Kafka defines them.

A metadata record's value (MetadataRecordSerde, key always null)::

    frame_version UNSIGNED_VARINT (1)  record_type UNSIGNED_VARINT  version UNSIGNED_VARINT  body

A KRaft control record (in a control batch): key ControlRecordKey (version
int16, type int16), value version int16 then the body; types 2-6 here (0/1
are the transaction markers of kproto.records).

doc-ref: metadata/src/main/resources/common/metadata/*.json,
clients/src/main/resources/common/message/{LeaderChangeMessage,SnapshotHeaderRecord,
SnapshotFooterRecord,KRaftVersionRecord,VotersRecord}.json (Apache Kafka 4.4.0, from its jars: see tests/kafka/pom.xml)."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kafka-repo", required=True)
    ap.add_argument("--ref", default="HEAD")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    groups = load(args.kafka_repo, args.ref, GROUPS)
    shares = load(args.kafka_repo, args.ref, SHARES)
    keys = sorted((int(d["validVersions"]), name[:-3]) for name, d in groups.items()
                  if name.endswith("Key") and int(versions_of(d["validVersions"])[0]) >= 3)
    group_msgs = [groups[f"{n}{kv}"] for _, n in keys for kv in ("Key", "Value")] + \
        [shares[n] for n in ("ShareSnapshotKey", "ShareSnapshotValue", "ShareUpdateKey", "ShareUpdateValue")]
    rows = "\n".join(f'    {t}: ("{n}",\n        {{{n}Key}},\n        {{{n}Value}}),' for t, n in keys)
    files = {HERE / "group_records.py": render(GROUP_DOC, group_msgs, GROUP_TAIL.replace("{rows}", rows))}

    meta = load(args.kafka_repo, args.ref, METADATA)
    records = sorted((d for d in meta.values() if d.get("type") == "metadata"), key=lambda d: d["apiKey"])
    control = [strip_comments(_git(args.kafka_repo, "show", f"{args.ref}:{CLIENT}/{n}.json")) for n in CONTROL]
    tail = ("#: record type -> message\nMETADATA_RECORDS = {{\n"
            + "\n".join(f"    {d['apiKey']}: {{{d['name']}}}," for d in records) + "\n}}\n\n"
            + "#: KRaft control record type -> message\nCONTROL_RECORDS = {{\n"
            + "\n".join(f"    {t}: {{{n}}}," for n, t in CONTROL.items()) + "\n}}")
    files[HERE / "metadata_records.py"] = render(METADATA_DOC, records + control, tail)
    return write_or_check(files, args.check)


if __name__ == "__main__":
    raise SystemExit(main())
