"""kafka-consumer-groups' flag values and files, parsed as ConsumerGroupCommand
parses them (Java's date, duration and split rules), and the consumer
protocol's assignment bytes. Pure functions: bad input is a ``UsageProblem``
or ``GroupCommandFailed`` with Kafka's text.
"""

from __future__ import annotations

import calendar
import csv
import re

from kproto.tools.main import UsageProblem

TopicPartition = tuple[str, int]
Plan = dict[TopicPartition, int]

STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling")


class GroupCommandFailed(Exception):
    """Kafka's ``Error: Executing consumer group command failed due to <message>``; the run stops."""


def parse_states(text: str) -> set[str]:
    """consumerGroupStatesFromString: comma-separated, trimmed, case-insensitive."""
    by_upper = {s.upper(): s for s in STATES}
    parsed = {by_upper.get(s.strip().upper()) for s in text.split(",")}
    if None in parsed:
        raise UsageProblem(f"Invalid state list '{text}'. Valid states are: {', '.join(STATES)}")
    return parsed


#: GroupType names ConsumerGroupCommand accepts for --type (Kafka 4.4 prints "Consumer, Classic")
TYPES = ("Consumer", "Classic")


def parse_types(text: str) -> set[str]:
    """consumerGroupTypesFromString: comma-separated, trimmed, case-insensitive."""
    by_lower = {t.lower(): t for t in TYPES}
    parsed = {by_lower.get(t.strip().lower()) for t in text.lower().split(",")}
    if None in parsed:
        raise UsageProblem(f"Invalid types list '{text}'. Valid types are: {', '.join(TYPES)}")
    return parsed


def _java_split(text: str, sep: str) -> list[str]:
    """``String.split``: trailing empty strings removed."""
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_topic_arg(arg: str) -> list[TopicPartition]:
    """``topic:0,1,2`` as parseTopicsWithPartitions reads it (Kafka's messages,
    its doubled quote included)."""
    parts = _java_split(arg, ":")
    if len(parts) != 2:
        raise UsageProblem(f"Invalid topic arg '{arg}', expected topic name and partitions")
    out = []
    for p in _java_split(parts[1], ","):
        if not re.fullmatch(r"[+-]?\d+", p) or not -2**31 <= int(p) < 2**31:
            raise UsageProblem(f"Invalid partition '{p}' specified in topic arg '{arg}''")
        out.append((parts[0], int(p)))
    return out


_DATETIME = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})T(\d{1,2}):(\d{1,2}):(\d{1,2})\.(\d+)"
                       r"(Z|[+-]\d{2}(?::?\d{2})?)")


def parse_datetime(text: str) -> int:
    """Utils.getDateTime: ``YYYY-MM-DDTHH:mm:SS.sss`` with an optional zone
    (UTC without one), strictly (SimpleDateFormat not lenient) -> epoch ms."""
    if len(_java_split(text, "T")) < 2:
        raise UsageProblem("Error: Executing consumer group command failed due to java.text.ParseException: "
                           "Error parsing timestamp. It does not contain a 'T' according to ISO8601 format")
    stamp = text if any(c in text.split("T", 1)[1] for c in "+-Z") else text + "Z"
    m = _DATETIME.fullmatch(stamp)
    bad = UsageProblem("Error: Executing consumer group command failed due to java.text.ParseException: "
                       f'Unparseable date: "{stamp}"')
    if not m:
        raise bad
    year, month, day, hour, minute, second, millis = (int(g) for g in m.groups()[:7])
    if not (1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1] and hour < 24
            and minute < 60 and second < 60 and millis < 1000):
        raise bad
    zone = m.group(8)
    offset_s = 0
    if zone != "Z":
        digits = zone[1:].replace(":", "")
        offset_s = (int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60) * (1 if zone[0] == "+" else -1)
    seconds = calendar.timegm((year, month, day, hour, minute, second)) - offset_s
    return seconds * 1000 + millis


_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?"
                       r"(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?", re.IGNORECASE)


def parse_duration_ns(text: str) -> int:
    """``java.time.Duration.parse`` (``PnDTnHnMn.nS``) in nanoseconds."""
    m = _DURATION.fullmatch(text)
    if not m or m.group(3) in ("T", "t") or not any(m.group(i) for i in (2, 4, 5, 6)):
        raise UsageProblem("Error: Executing consumer group command failed due to "
                           "Text cannot be parsed to a Duration")
    days, hours, minutes, seconds = (int(m.group(i) or 0) for i in (2, 4, 5, 6))
    nanos = int((m.group(7) or "").ljust(9, "0"))
    if (m.group(6) or "").startswith("-"):
        nanos = -nanos
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    total_ns = total * 1_000_000_000 + nanos
    return -total_ns if m.group(1) == "-" else total_ns


def decode_assignment(data: bytes) -> list[TopicPartition]:
    """ConsumerProtocol.deserializeAssignment's partitions, deduplicated (Kafka
    keeps a Set). A version newer than kproto's schema is read as the newest,
    as Kafka does; empty bytes (a member awaiting SyncGroup) assign nothing."""
    if not data:
        return []
    from kproto import schemas
    from kproto.schemas.consumer_offsets import ConsumerProtocolAssignment
    if int.from_bytes(data[:2], "big", signed=True) > 3:
        data = b"\x00\x03" + bytes(data[2:])
    parsed = schemas.parse(ConsumerProtocolAssignment, data).data
    return list(dict.fromkeys((t.topic, p) for t in parsed.assigned_partitions for p in t.partitions))


def parse_reset_plan(text: str, groups: list[str]) -> dict[str, Plan]:
    """parseResetPlan: ``topic,partition,offset`` lines when one --group is
    given and the first line reads that way, else ``group,topic,partition,offset``."""
    lines = [l.rstrip("\r") for l in _java_split(text, "\n")]
    rows = [(i, r) for i, r in enumerate(csv.reader(lines), 1) if r]

    def typed(fields: list[str], n: int) -> tuple | None:
        numbers = fields[-2:]           # partition (int) and offset (long), as Jackson binds them
        if len(fields) != n or not all(re.fullmatch(r"[+-]?\d+", f) for f in numbers):
            return None
        return (*fields[:-2], int(numbers[0]), int(numbers[1]))

    three = len(groups) == 1 and bool(rows) and typed(rows[0][1], 3) is not None
    out: dict[str, Plan] = {}
    for number, fields in rows:
        record = typed(fields, 3 if three else 4)
        if record is None:
            raise GroupCommandFailed(f"Cannot read line {number} of the reset plan: {lines[number - 1]!r} "
                                     f"(expected {'topic,partition,offset' if three else 'group,topic,partition,offset'})")
        group, topic, partition, offset = (groups[0], *record) if three else record
        out.setdefault(group, {})[(topic, partition)] = offset
    return out


def topic_partition(tp: TopicPartition) -> str:
    """``TopicPartition.toString``."""
    return f"{tp[0]}-{tp[1]}"


# --- the command ---------------------------------------------------------------------
