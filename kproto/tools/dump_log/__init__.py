"""``kproto dump-log`` (kafka-dump-log.sh): ``command`` the click command and the
file dispatch, ``lines`` the batch, record and index lines Kafka prints, ``txn``
the ``.txnindex`` and ``.snapshot`` dumps, ``explain`` the annotated hex view."""
