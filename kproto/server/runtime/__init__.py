"""The one coordinator runtime (Kafka's coordinator-common): ``core`` the sans-I/O
timers, outbox and responses every coordinator is built on, ``state_topic`` the
records of a coordinator's state topic, ``shell`` the event-loop driver."""
