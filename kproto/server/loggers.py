"""The broker's loggers as Kafka's BROKER_LOGGER config resource (resource type 8) shows
them: Kafka's Log4jController lists the root logger and every log4j logger the broker made,
each with its effective level; kproto lists Python's root logger as ``root`` and every
logger under ``kproto`` (``kproto.server``, ``kproto.server.groups``, ``kproto.log``...)
that this process made, with Kafka's level names."""

from __future__ import annotations

import logging

ROOT_LOGGER = "root"          # Log4jController.ROOT_LOGGER
#: LogLevelConfig.VALID_LOG_LEVELS -> Python's levels (TRACE below DEBUG, FATAL as CRITICAL)
LEVELS = {"TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
          "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
VALID_LOG_LEVELS = ", ".join(sorted(LEVELS))      # RuntimeLoggerManager.VALID_LOG_LEVELS_STRING


def level_name(level: int) -> str:
    """The Kafka level a Python level falls in (the highest at or below it; TRACE under 5)."""
    return max((n for n, v in LEVELS.items() if v <= level), key=LEVELS.__getitem__, default="TRACE")


def _logger(name: str) -> logging.Logger | None:
    if name == ROOT_LOGGER:
        return logging.getLogger()
    if name != "kproto" and not name.startswith("kproto."):
        return None
    found = logging.Logger.manager.loggerDict.get(name)
    return found if isinstance(found, logging.Logger) else None      # a PlaceHolder was never made


def loggers() -> dict[str, str]:
    """Log4jController.loggers: name -> effective level (a logger without a level has its
    nearest ancestor's)."""
    out = {ROOT_LOGGER: level_name(logging.getLogger().level)}
    for name in list(logging.Logger.manager.loggerDict):
        logger = _logger(name)
        if logger is not None:
            out[name] = level_name(logger.getEffectiveLevel())
    return out


def exists(name: str) -> bool:
    return _logger(name) is not None


def set_level(name: str, level: str) -> None:
    _logger(name).setLevel(LEVELS[level])


def unset_level(name: str) -> None:
    """Log4jController.unsetLogLevel: the logger takes its ancestors' level again."""
    _logger(name).setLevel(logging.NOTSET)
