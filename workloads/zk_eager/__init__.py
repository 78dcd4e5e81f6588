"""A group member of the Kafka 0.8 high-level consumer (``ZookeeperConsumerConnector``),
where every consumer rebalances itself through ZooKeeper (seed 000). Run as its own
OS process, like the other drivers, and writing the same history events.

The group lives in ZooKeeper, laid out as the original laid it out::

    /consumers/<g>/ids/<consumer id>             ephemeral: registration (JSON, the subscription)
    /consumers/<g>/owners/<topic>/<partition>    ephemeral: the consumer thread that owns it
    /consumers/<g>/offsets/<topic>/<partition>   persistent: the next offset to read
    /brokers/ids, /brokers/topics/<topic>        the brokers' registrations and partitions (watched)

Any change of the group's members, the brokers or a subscribed topic makes every
consumer rebalance on its own: release everything (commit, stop fetching, delete its
owner znodes), compute the range assignment over the sorted consumer threads, claim
its share by creating owner znodes. A partition whose previous owner has not let go
yet makes the claim fail: release, back off ``rebalance_backoff_ms``, try again, at
most ``rebalance_max_retries`` attempts — then ``ConsumerRebalanceFailedException``:
the consumer keeps running without partitions until the next change (the herd effect
of seed 000). Nothing fences offsets: whoever writes last wins.

Threads, as in the original: rebalances run on their own thread (the original's
watcher thread), records are processed on the main thread (the consumer thread).
Closing the fetchers waits for the consumer thread, as the original waited for its
fetcher threads: until its poll ends or the record in hand is done; the rest of the
batch is dropped (a lock keeps processing and rebalancing apart). Records are fetched
from the real brokers by a librdkafka consumer with a manual assignment, positioned at
the ZooKeeper offsets;
the rebalancer only publishes that assignment and the consumer thread applies it between
polls (``workloads.fetching``, shared with the coordinator driver).

The generation in the history is the ``cversion`` of ``/consumers/<g>/ids``, read with
the member list an assignment was computed from: consumers that saw the same
membership agree on it, and every join or leave moves it on.

Usage: ``python -m workloads.zk_eager SPEC.json`` (a ``workloads.driver.MemberSpec`` whose
``settings`` are ``workloads.zk_settings.ZkEagerMemberSettings``).

The parts: ``layout`` (where the group lives in ZooKeeper, how its znodes read and write),
``assignment`` (what a rebalance computes, and from what), ``member`` (the process).
"""

from workloads.zk_eager.member import main

__all__ = ["main"]
