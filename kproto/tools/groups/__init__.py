"""``kproto groups`` (kafka-consumer-groups.sh): ``command`` the click command and
its actions, ``args`` the flag values and files parsed as Kafka parses them,
``text`` the output lines Kafka prints."""
