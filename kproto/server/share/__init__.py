"""KIP-932 share groups, sans-I/O: record states (``state``), one share partition
(``partition``), membership and the simple assignor (``group``), the
``__share_group_state`` records (``persistence``), configs (``config``), and
``coordinator`` (``ShareCoordinator``, on the shared runtime)."""
