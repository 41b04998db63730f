"""Topic and dynamic broker configs on the controller (Kafka's ConfigurationControlManager):
AlterConfigs and IncrementalAlterConfigs forwarded by the brokers are checked against
the controller's image and become ConfigRecords, one per key that changes (a null
value removes it); every broker applies them from the metadata log.

The broker checked each resource's entries first (ConfigAdminManager.preprocess:
duplicate keys, null values); here, as the controller does: the topic exists, a
broker resource names a node id or "" (ControllerConfigurationValidator), the
operations apply to the current configs, and the result validates (LogConfig for a
topic, the dynamic broker configs' rules for a broker layer).
"""

from __future__ import annotations

from typing import Any

from kproto.errors import ErrorCode, InvalidRequestError, KafkaError
from kproto.server.cluster import image as I
from kproto.server.dynamic_config import validate as validate_broker_configs
from kproto.server.handlers.configs import prepare_incremental
from kproto.topic_config import LogConfig

__all__ = ["alter_configs"]


def _check(image: I.MetadataImage, resource: Any) -> dict[str, str]:
    """The resource's current configs, or the error Kafka's controller answers."""
    kind, name = resource.resource_type, resource.resource_name
    if kind == I.TOPIC_RESOURCE:
        current = image.configs(kind, name)
        if current is None:
            raise KafkaError(f"The topic '{name}' does not exist.", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return current
    if kind == I.BROKER_RESOURCE:
        if name != "" and not name.lstrip("-").isdigit():
            raise InvalidRequestError(f"Node id must be an integer, but it is: {name}")
        return image.configs(kind, name)
    raise InvalidRequestError(f"Unsupported resource type {kind}")


def _records(resource: Any, old: dict[str, str], new: dict[str, str]) -> list[tuple[int, dict]]:
    """A ConfigRecord per key set or changed, one with a null value per key removed."""
    changed = {k: v for k, v in new.items() if old.get(k) != v} | {k: None for k in old if k not in new}
    return [(I.CONFIG, {"resource_type": resource.resource_type, "resource_name": resource.resource_name,
                        "name": k, "value": v}) for k, v in changed.items()]


def alter_configs(image: I.MetadataImage, log_defaults: LogConfig, resources: list[Any], *,
                  incremental: bool) -> tuple[list[dict], list[tuple[int, dict]]]:
    """(each resource's answer, the records to write) for one (Incremental)AlterConfigs:
    incremental operations apply to the stored configs, a legacy AlterConfigs replaces them
    (ConfigurationControlManager.incrementalAlterConfigs / legacyAlterConfigs)."""
    answers, records = [], []
    for r in resources:
        out = {"error_code": 0, "error_message": None, "resource_type": r.resource_type,
               "resource_name": r.resource_name}
        try:
            old = _check(image, r)
            broker = r.resource_type == I.BROKER_RESOURCE
            if incremental:
                new = dict(old)
                for c in r.configs:
                    prepare_incremental(new, c.config_operation, c.name, c.value, broker_config=broker)
            else:
                new = {c.name: c.value for c in r.configs}
            if broker:
                validate_broker_configs(new, r.resource_name != "")
            else:
                LogConfig.from_props(new, base=log_defaults)
            records += _records(r, old, new)
        except KafkaError as e:
            out.update(error_code=e.error_code, error_message=str(e))
        answers.append(out)
    return answers, records
