"""``kproto topics`` (kafka-topics.sh): ``command`` the click command and its
actions, ``text`` the output lines Kafka prints."""
