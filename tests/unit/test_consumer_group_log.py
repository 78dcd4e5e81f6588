"""workloads/consumer.py's GroupLogReader: librdkafka's ``cgrp`` debug lines are the classic
driver's only source of its generation and member id (and, under KIP-848, of its member epoch).

Every sample line below is verbatim what librdkafka v2.16.0 (bundled with confluent-kafka
2.16.1; its INIT line says ``librdkafka v2.16.0 (0x21000ff)``) wrote to a member's stderr in
real runs of 2026-11-23 (``python3 -m harness run``, member processes with the stderr tap
passing every line on to the member's log as well), filtered to the group's story:

- EAGER: consumer-2 of scenarios/smoke.yaml (Kafka 3.9.2, ZooKeeper, classic-eager, range):
  start-up, a SIGSTOP past its session timeout, rejoining under a new member id, unsubscribing.
- COOPERATIVE: consumer-2 of the same scenario as classic-cooperative (cooperative-sticky):
  the session timeout, rejoining, then a rebalance announced by a heartbeat.
- KIP848: consumer-2 of the same scenario on Kafka 4.1.1 with ``protocol: consumer``
  (``uniform``): joining, fenced after the pause, rejoining at a later epoch, leaving.
- MULTI_TOPIC: a pattern subscription against librdkafka's mock cluster (the formatting is
  librdkafka's own; no real run of the lab subscribes to two topics at start-up).

tests/unit/test_client_log.py covers the line format, the tap and a first classic / KIP-848
story; this module covers the rest of what the reader promises.
"""

from __future__ import annotations

import re

import pytest

from oracle.protocols import GENERATIONS
from tests.recording import STAMPED, Recording
from workloads.client_log import parse_line
from workloads.consumer import GroupLogReader

EAGER = [
    '%7|1795474202.132|MEMBERID|consumer-2#consumer-1| [thrd:app]: Group "smoke": updating member id "(not-set)" -> ""',
    '%7|1795474202.229|CGRPCOORD|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:28456/2: Group "smoke" FindCoordinator response error: COORDINATOR_NOT_AVAILABLE: The coordinator is not available.',
    '%7|1795474203.159|CGRPCOORD|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:28456/2: Group "smoke" coordinator is 127.0.0.1:26447 id 1',
    '%7|1795474203.159|CGRPCOORD|consumer-2#consumer-1| [thrd:main]: Group "smoke" changing coordinator -1 -> 1',
    '%7|1795474203.159|COORDSET|consumer-2#consumer-1| [thrd:main]: Group "smoke" coordinator set to broker 127.0.0.1:26447/1',
    '%7|1795474203.182|JOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": join with 0 subscribed topic(s)',
    '%7|1795474203.183|JOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": postponing join until up-to-date metadata is available',
    '%7|1795474203.184|CGRPCOORD|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:28456/2: Group "smoke" coordinator is 127.0.0.1:26447 id 1',
    '%7|1795474203.201|SUBSCRIPTION|consumer-2#consumer-1| [thrd:main]: Group "smoke": effective subscription list changed from 0 to 1 topic(s):',
    "%7|1795474203.201|SUBSCRIPTION|consumer-2#consumer-1| [thrd:main]:  Topic events with 6 partition(s)",
    '%7|1795474203.201|REJOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": subscription updated from metadata change: rejoining group in state wait-metadata',
    '%7|1795474203.201|GRPLEADER|consumer-2#consumer-1| [thrd:main]: Group "smoke": resetting group leader info: group (re)join',
    '%7|1795474203.201|REJOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke" (re)joining in join-state wait-metadata with 0 assigned partition(s): Metadata for subscribed topic(s) has changed',
    '%7|1795474203.201|REBALANCE|consumer-2#consumer-1| [thrd:main]: Group "smoke" initiating rebalance (NONE) in state up (join-state wait-metadata) with 0 assigned partition(s): Metadata for subscribed topic(s) has changed',
    '%7|1795474203.201|REJOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": Rejoining group without an assignment: Metadata for subscribed topic(s) has changed',
    '%7|1795474203.201|JOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": join with 1 subscribed topic(s)',
    '%7|1795474203.201|JOIN|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:26447/1: Joining group "smoke" with 1 subscribed topic(s) and member id ""',
    "%7|1795474203.350|JOINGROUP|consumer-2#consumer-1| [thrd:main]: JoinGroup response: GenerationId -1, Protocol , LeaderId , my MemberId consumer-2-bb68dae4-3034-4d53-bdde-621fa7297077, member metadata count 0: Broker: Group member needs a valid member ID",
    '%7|1795474203.350|MEMBERID|consumer-2#consumer-1| [thrd:main]: Group "smoke": updating member id "" -> "consumer-2-bb68dae4-3034-4d53-bdde-621fa7297077"',
    '%7|1795474203.350|REJOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": Rejoining group without an assignment: JoinGroup error: Broker: Group member needs a valid member ID',
    '%7|1795474203.350|JOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": join with 1 subscribed topic(s)',
    '%7|1795474203.350|JOIN|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:26447/1: Joining group "smoke" with 1 subscribed topic(s) and member id "consumer-2-bb68dae4-3034-4d53-bdde-621fa7297077"',
    "%7|1795474203.466|JOINGROUP|consumer-2#consumer-1| [thrd:main]: JoinGroup response: GenerationId 1, Protocol range, LeaderId consumer-2-bb68dae4-3034-4d53-bdde-621fa7297077 (me), my MemberId consumer-2-bb68dae4-3034-4d53-bdde-621fa7297077, member metadata count 1: (no error)",
    '%7|1795474203.466|JOINGROUP|consumer-2#consumer-1| [thrd:main]: I am elected leader for group "smoke" with 1 member(s)',
    '%7|1795474203.466|GRPLEADER|consumer-2#consumer-1| [thrd:main]: Group "smoke": resetting group leader info: JoinGroup response clean-up',
    "%7|1795474203.553|SYNCGROUP|consumer-2#consumer-1| [thrd:main]: SyncGroup response: Broker: Group rebalance in progress (0 bytes of MemberState data)",
    '%7|1795474203.553|GRPSYNC|consumer-2#consumer-1| [thrd:main]: Group "smoke": synchronization failed: Broker: Group rebalance in progress: rejoining',
    '%7|1795474203.553|REJOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": Rejoining group without an assignment: SyncGroup error: Broker: Group rebalance in progress',
    '%7|1795474203.553|JOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": join with 1 subscribed topic(s)',
    '%7|1795474203.553|JOIN|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:26447/1: Joining group "smoke" with 1 subscribed topic(s) and member id "consumer-2-bb68dae4-3034-4d53-bdde-621fa7297077"',
    "%7|1795474203.558|JOINGROUP|consumer-2#consumer-1| [thrd:main]: JoinGroup response: GenerationId 2, Protocol range, LeaderId consumer-2-bb68dae4-3034-4d53-bdde-621fa7297077 (me), my MemberId consumer-2-bb68dae4-3034-4d53-bdde-621fa7297077, member metadata count 2: (no error)",
    '%7|1795474203.558|JOINGROUP|consumer-2#consumer-1| [thrd:main]: I am elected leader for group "smoke" with 2 member(s)',
    '%7|1795474203.558|GRPLEADER|consumer-2#consumer-1| [thrd:main]: Group "smoke": resetting group leader info: JoinGroup response clean-up',
    "%7|1795474203.687|SYNCGROUP|consumer-2#consumer-1| [thrd:main]: SyncGroup response: Broker: Group rebalance in progress (0 bytes of MemberState data)",
    '%7|1795474203.687|GRPSYNC|consumer-2#consumer-1| [thrd:main]: Group "smoke": synchronization failed: Broker: Group rebalance in progress: rejoining',
    '%7|1795474203.687|REJOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": Rejoining group without an assignment: SyncGroup error: Broker: Group rebalance in progress',
    '%7|1795474203.687|JOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": join with 1 subscribed topic(s)',
    '%7|1795474203.687|JOIN|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:26447/1: Joining group "smoke" with 1 subscribed topic(s) and member id "consumer-2-bb68dae4-3034-4d53-bdde-621fa7297077"',
    "%7|1795474205.548|JOINGROUP|consumer-2#consumer-1| [thrd:main]: JoinGroup response: GenerationId 3, Protocol range, LeaderId consumer-2-bb68dae4-3034-4d53-bdde-621fa7297077 (me), my MemberId consumer-2-bb68dae4-3034-4d53-bdde-621fa7297077, member metadata count 3: (no error)",
    '%7|1795474205.548|JOINGROUP|consumer-2#consumer-1| [thrd:main]: I am elected leader for group "smoke" with 3 member(s)',
    '%7|1795474205.548|GRPLEADER|consumer-2#consumer-1| [thrd:main]: Group "smoke": resetting group leader info: JoinGroup response clean-up',
    "%7|1795474205.581|SYNCGROUP|consumer-2#consumer-1| [thrd:main]: SyncGroup response: Success (30 bytes of MemberState data)",
    '%7|1795474205.581|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: GroupCoordinator/1: Heartbeat for group "smoke" generation id 3',
    "%4|1795474225.811|SESSTMOUT|consumer-2#consumer-1| [thrd:main]: Consumer group session timed out (in join-state steady) after 12188 ms without a successful response from the group coordinator (broker 1, last error was Success): revoking assignment and rejoining group",
    '%7|1795474225.812|MEMBERID|consumer-2#consumer-1| [thrd:main]: Group "smoke": updating member id "consumer-2-bb68dae4-3034-4d53-bdde-621fa7297077" -> ""',
    '%7|1795474225.812|REBALANCE|consumer-2#consumer-1| [thrd:main]: Group "smoke" initiating rebalance (EAGER) in state up (join-state steady) with 2 assigned partition(s) (lost): Consumer group session timed out (in join-state steady) after 12188 ms without a successful response from the group coordinator (broker 1, last error was Success)',
    '%7|1795474225.812|LOST|consumer-2#consumer-1| [thrd:main]: Group "smoke": current assignment of 2 partition(s) lost: Consumer group session timed out (in join-state steady) after 12188 ms without a successful response from the group coordinator (broker 1, last error was Success): revoking assignment and rejoining',
    '%7|1795474225.817|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Group "smoke" heartbeat error response in state up (join-state wait-unassign-call, 0 partition(s) assigned): Broker: Unknown member',
    '%7|1795474225.817|REBALANCE|consumer-2#consumer-1| [thrd:main]: Group "smoke": rebalance (EAGER) already in progress, skipping in state up (join-state wait-unassign-call) with 0 assigned partition(s) (lost): resetting member-id',
    '%7|1795474225.832|REBALANCE|consumer-2#consumer-1| [thrd:main]: Group "smoke": rebalance (EAGER) already in progress, skipping in state up (join-state wait-unassign-call) with 0 assigned partition(s) (lost): OffsetCommit error: Unknown member',
    '%7|1795474225.834|LOST|consumer-2#consumer-1| [thrd:main]: Group "smoke": current assignment no longer considered lost: unassign done',
    '%7|1795474225.834|REJOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": Rejoining group without an assignment: Unassignment done',
    '%7|1795474225.834|JOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": join with 1 subscribed topic(s)',
    '%7|1795474225.834|JOIN|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:26447/1: Joining group "smoke" with 1 subscribed topic(s) and member id ""',
    "%7|1795474225.841|JOINGROUP|consumer-2#consumer-1| [thrd:main]: JoinGroup response: GenerationId -1, Protocol , LeaderId , my MemberId consumer-2-5968e4dd-a1a0-4143-b990-792785096e03, member metadata count 0: Broker: Group member needs a valid member ID",
    '%7|1795474225.841|MEMBERID|consumer-2#consumer-1| [thrd:main]: Group "smoke": updating member id "" -> "consumer-2-5968e4dd-a1a0-4143-b990-792785096e03"',
    '%7|1795474225.841|REJOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": Rejoining group without an assignment: JoinGroup error: Broker: Group member needs a valid member ID',
    '%7|1795474225.841|JOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": join with 1 subscribed topic(s)',
    '%7|1795474225.841|JOIN|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:26447/1: Joining group "smoke" with 1 subscribed topic(s) and member id "consumer-2-5968e4dd-a1a0-4143-b990-792785096e03"',
    "%7|1795474226.631|JOINGROUP|consumer-2#consumer-1| [thrd:main]: JoinGroup response: GenerationId 5, Protocol range, LeaderId consumer-1-4487e3a9-242f-4bed-b63c-7472527161de, my MemberId consumer-2-5968e4dd-a1a0-4143-b990-792785096e03, member metadata count 0: (no error)",
    "%7|1795474226.640|SYNCGROUP|consumer-2#consumer-1| [thrd:main]: SyncGroup response: Success (30 bytes of MemberState data)",
    "%6|1795474231.861|FAIL|consumer-2#consumer-1| [thrd:127.0.0.1:28456/2]: 127.0.0.1:28456/2: Disconnected: connection closed by peer: receive 0 after POLLIN (after 29665ms in state UP)",
    '%7|1795474237.193|CGRPCOORD|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:26447/1: Group "smoke" coordinator is 127.0.0.1:26447 id 1',
    '%7|1795474254.129|SUBSCRIPTION|consumer-2#consumer-1| [thrd:main]: Group "smoke": clearing subscribed topics list (1)',
    '%7|1795474254.129|SUBSCRIPTION|consumer-2#consumer-1| [thrd:main]: Group "smoke": effective subscription list changed from 1 to 0 topic(s):',
    '%7|1795474254.129|GRPLEADER|consumer-2#consumer-1| [thrd:main]: Group "smoke": resetting group leader info: unsubscribe',
    '%7|1795474254.129|REBALANCE|consumer-2#consumer-1| [thrd:main]: Group "smoke" initiating rebalance (EAGER) in state up (join-state steady) with 2 assigned partition(s): unsubscribe',
    '%7|1795474254.130|MEMBERID|consumer-2#consumer-1| [thrd:main]: Group "smoke": updating member id "consumer-2-5968e4dd-a1a0-4143-b990-792785096e03" -> ""',
    '%7|1795474254.130|LEAVE|consumer-2#consumer-1| [thrd:main]: Group "smoke": leave (in state up)',
    '%7|1795474254.132|NOREJOIN|consumer-2#consumer-1| [thrd:main]: Group "smoke": Not rejoining group without an assignment: Unassignment done: no subscribed topics',
    "%7|1795474254.148|LEAVEGROUP|consumer-2#consumer-1| [thrd:main]: LeaveGroup response received in state up",
    '%7|1795474254.148|COORDCLEAR|consumer-2#consumer-1| [thrd:main]: Group "smoke" broker 127.0.0.1:26447/1 is no longer coordinator',
    '%7|1795474254.150|MEMBERID|consumer-2#consumer-1| [thrd:app]: Group "smoke": updating member id "" -> "(not-set)"',
]

COOPERATIVE = [
    "%4|1795474290.202|SESSTMOUT|consumer-2#consumer-1| [thrd:main]: Consumer group session timed out (in join-state steady) after 12472 ms without a successful response from the group coordinator (broker 3, last error was Success): revoking assignment and rejoining group",
    '%7|1795474290.202|MEMBERID|consumer-2#consumer-1| [thrd:main]: Group "pt-coop": updating member id "consumer-2-31bd2202-1f7b-43e6-bf36-e8c25495fdd5" -> ""',
    '%7|1795474290.202|REBALANCE|consumer-2#consumer-1| [thrd:main]: Group "pt-coop" initiating rebalance (COOPERATIVE) in state up (join-state steady) with 2 assigned partition(s) (lost): Consumer group session timed out (in join-state steady) after 12472 ms without a successful response from the group coordinator (broker 3, last error was Success)',
    '%7|1795474290.202|LOST|consumer-2#consumer-1| [thrd:main]: Group "pt-coop": current assignment of 2 partition(s) lost: Consumer group session timed out (in join-state steady) after 12472 ms without a successful response from the group coordinator (broker 3, last error was Success): revoking incremental assignment and rejoining',
    '%7|1795474290.202|REBALANCE|consumer-2#consumer-1| [thrd:main]: Group "pt-coop": revoking all 2 partition(s) (assignment lost)',
    '%7|1795474290.210|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Group "pt-coop" heartbeat error response in state up (join-state wait-unassign-call, 0 partition(s) assigned): Broker: Unknown member',
    '%7|1795474290.210|REBALANCE|consumer-2#consumer-1| [thrd:main]: Group "pt-coop": rebalance (COOPERATIVE) already in progress, skipping in state up (join-state wait-unassign-call) with 0 assigned partition(s) (lost), rejoin on rebalance: resetting member-id',
    '%7|1795474290.235|REBALANCE|consumer-2#consumer-1| [thrd:main]: Group "pt-coop": rebalance (COOPERATIVE) already in progress, skipping in state up (join-state wait-unassign-call) with 0 assigned partition(s) (lost), rejoin on rebalance: OffsetCommit error: Unknown member',
    '%7|1795474290.236|LOST|consumer-2#consumer-1| [thrd:main]: Group "pt-coop": current assignment no longer considered lost: incremental unassign done',
    '%7|1795474290.236|REJOIN|consumer-2#consumer-1| [thrd:main]: Group "pt-coop": Rejoining group without an assignment: Incremental unassignment done',
    '%7|1795474290.236|JOIN|consumer-2#consumer-1| [thrd:main]: Group "pt-coop": join with 1 subscribed topic(s)',
    '%7|1795474290.236|JOIN|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:30464/3: Joining group "pt-coop" with 1 subscribed topic(s) and member id ""',
    "%7|1795474290.238|JOINGROUP|consumer-2#consumer-1| [thrd:main]: JoinGroup response: GenerationId -1, Protocol , LeaderId , my MemberId consumer-2-83c53ae8-b2fb-4690-9115-216b8c6b9c78, member metadata count 0: Broker: Group member needs a valid member ID",
    '%7|1795474290.238|MEMBERID|consumer-2#consumer-1| [thrd:main]: Group "pt-coop": updating member id "" -> "consumer-2-83c53ae8-b2fb-4690-9115-216b8c6b9c78"',
    '%7|1795474290.238|REBALANCE|consumer-2#consumer-1| [thrd:main]: Group "pt-coop" initiating rebalance (COOPERATIVE) in state up (join-state wait-join) with 0 assigned partition(s) (lost): JoinGroup error',
    '%7|1795474290.238|REJOIN|consumer-2#consumer-1| [thrd:main]: Group "pt-coop": Rejoining group without an assignment: Current assignment is empty',
    '%7|1795474290.238|JOIN|consumer-2#consumer-1| [thrd:main]: Group "pt-coop": join with 1 subscribed topic(s)',
    '%7|1795474290.238|JOIN|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:30464/3: Joining group "pt-coop" with 1 subscribed topic(s) and member id "consumer-2-83c53ae8-b2fb-4690-9115-216b8c6b9c78"',
    "%7|1795474290.786|JOINGROUP|consumer-2#consumer-1| [thrd:main]: JoinGroup response: GenerationId 4, Protocol cooperative-sticky, LeaderId consumer-1-979dacee-0101-4248-b78b-4405644582fc, my MemberId consumer-2-83c53ae8-b2fb-4690-9115-216b8c6b9c78, member metadata count 0: (no error)",
    "%7|1795474290.813|SYNCGROUP|consumer-2#consumer-1| [thrd:main]: SyncGroup response: Success (38 bytes of MemberState data)",
    '%7|1795474291.204|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Group "pt-coop" heartbeat error response in state up (join-state steady, 0 partition(s) assigned): Broker: Group rebalance in progress',
    '%7|1795474291.204|REJOIN|consumer-2#consumer-1| [thrd:main]: Group "pt-coop": Rejoining group with 0 owned partition(s): Group is rebalancing',
    '%7|1795474291.314|JOIN|consumer-2#consumer-1| [thrd:main]: Group "pt-coop": join with 1 subscribed topic(s)',
    '%7|1795474291.315|JOIN|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:30464/3: Joining group "pt-coop" with 1 subscribed topic(s) and member id "consumer-2-83c53ae8-b2fb-4690-9115-216b8c6b9c78"',
    "%7|1795474291.326|JOINGROUP|consumer-2#consumer-1| [thrd:main]: JoinGroup response: GenerationId 5, Protocol cooperative-sticky, LeaderId consumer-1-979dacee-0101-4248-b78b-4405644582fc, my MemberId consumer-2-83c53ae8-b2fb-4690-9115-216b8c6b9c78, member metadata count 0: (no error)",
    "%7|1795474291.349|SYNCGROUP|consumer-2#consumer-1| [thrd:main]: SyncGroup response: Success (38 bytes of MemberState data)",
]

KIP848 = [
    '%7|1795474352.130|MEMBERID|consumer-2#consumer-1| [thrd:app]: Group "pt-848": updating member id "(not-set)" -> "kle7bn+hS5q/hCs2WjXVLQ"',
    "%7|1795474352.136|INIT|consumer-2#consumer-1| [thrd:app]: librdkafka v2.16.0 (0x21000ff) consumer-2#consumer-1 initialized (builtin.features gzip,snappy,ssl,sasl,regex,lz4,sasl_plain,sasl_scram,plugins,zstd,sasl_oauthbearer,http,oidc, STRIP STATIC_LINKING GCC GXX PKGCONFIG INSTALL GNULD LDS C11THREADS LIBDL PLUGINS ZLIB SSL ZSTD CURL HDRHISTOGRAM SYSLOG SNAPPY SOCKEM SASL_SCRAM SASL_OAUTHBEARER OAUTHBEARER_OIDC CRC32C_HW, debug 0x100)",
    '%7|1795474352.136|SUBSCRIBE|consumer-2#consumer-1| [thrd:main]: Group "pt-848": subscribe to new subscription of 1 topics (join-state init)',
    "%7|1795474352.136|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Expediting next heartbeat, with backoff 0: subscription changed",
    '%7|1795474352.235|CGRPCOORD|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:17677/2: Group "pt-848" FindCoordinator response error: COORDINATOR_NOT_AVAILABLE: The coordinator is not available.',
    '%7|1795474353.138|CGRPCOORD|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:17677/2: Group "pt-848" coordinator is 127.0.0.1:15493 id 3',
    '%7|1795474353.138|CGRPCOORD|consumer-2#consumer-1| [thrd:main]: Group "pt-848" changing coordinator -1 -> 3',
    "%7|1795474353.138|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Expediting next heartbeat, with backoff 0: coordinator changed",
    '%7|1795474353.138|COORDSET|consumer-2#consumer-1| [thrd:main]: Group "pt-848" coordinator set to broker 127.0.0.1:15493/3',
    '%7|1795474353.151|CGRPCOORD|consumer-2#consumer-1| [thrd:main]: 127.0.0.1:17677/2: Group "pt-848" coordinator is 127.0.0.1:15493 id 3',
    '%7|1795474353.152|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Sending new subscription "events((null))[-1]"',
    '%7|1795474353.152|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: GroupCoordinator/3: ConsumerGroupHeartbeat of member id "kle7bn+hS5q/hCs2WjXVLQ", group id "pt-848", generation id 0, group instance id "(null)", current assignment "", subscribed topics "events((null))[-1]", subscribed topic regex "", remote assignor "uniform"',
    "%7|1795474353.152|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Expediting next heartbeat, with backoff 850: Assignment Done: in init state",
    '%7|1795474353.330|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: ConsumerGroupHeartbeat response received for member id "kle7bn+hS5q/hCs2WjXVLQ" with epoch 2',
    '%7|1795474353.331|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: ConsumerGroupHeartbeat received target assignment ""',
    '%7|1795474354.154|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: GroupCoordinator/3: ConsumerGroupHeartbeat of member id "kle7bn+hS5q/hCs2WjXVLQ", group id "pt-848", generation id 2, group instance id "(null)", current assignment "", subscribed topics "events((null))[-1]", subscribed topic regex "", remote assignor "uniform"',
    '%7|1795474354.272|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: ConsumerGroupHeartbeat response received for member id "kle7bn+hS5q/hCs2WjXVLQ" with epoch 3',
    '%7|1795474354.272|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: ConsumerGroupHeartbeat received target assignment "(null)(ibCQL7VET5OTR7FgwikoVw)[3], (null)(ibCQL7VET5OTR7FgwikoVw)[4]"',
    "%7|1795474354.272|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Metadata not found for the assigned topic id: ibCQL7VET5OTR7FgwikoVw. Continuing without it",
    "%7|1795474354.272|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Metadata not found for the assigned topic id: ibCQL7VET5OTR7FgwikoVw. Continuing without it",
    '%7|1795474354.312|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Metadata available for 2/2 of next target assignment,  which is: "events(ibCQL7VET5OTR7FgwikoVw)[3], events(ibCQL7VET5OTR7FgwikoVw)[4]"',
    '%7|1795474354.312|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Reconciliation starts with new target assignment "events(ibCQL7VET5OTR7FgwikoVw)[3], events(ibCQL7VET5OTR7FgwikoVw)[4]". Next assignment cleared',
    "%7|1795474354.529|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Expediting next heartbeat, with backoff 0: Assignment Done: in steady state, waiting for ack",
    '%7|1795474354.529|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Acknowledging target assignment "events(ibCQL7VET5OTR7FgwikoVw)[3], events(ibCQL7VET5OTR7FgwikoVw)[4]"',
    '%7|1795474354.529|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: GroupCoordinator/3: ConsumerGroupHeartbeat of member id "kle7bn+hS5q/hCs2WjXVLQ", group id "pt-848", generation id 3, group instance id "NULL", current assignment "events(ibCQL7VET5OTR7FgwikoVw)[3], events(ibCQL7VET5OTR7FgwikoVw)[4]", subscribed topics "NULL", subscribed topic regex "NULL", remote assignor "NULL"',
    '%7|1795474354.596|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: ConsumerGroupHeartbeat response received for member id "kle7bn+hS5q/hCs2WjXVLQ" with epoch 3',
    '%7|1795474354.596|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Target assignment acked, new current assignment  "events(ibCQL7VET5OTR7FgwikoVw)[3], events(ibCQL7VET5OTR7FgwikoVw)[4]"',
    '%7|1795474355.530|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: GroupCoordinator/3: ConsumerGroupHeartbeat of member id "kle7bn+hS5q/hCs2WjXVLQ", group id "pt-848", generation id 3, group instance id "NULL", current assignment "NULL", subscribed topics "NULL", subscribed topic regex "NULL", remote assignor "NULL"',
    '%7|1795474375.177|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: GroupCoordinator/3: ConsumerGroupHeartbeat of member id "kle7bn+hS5q/hCs2WjXVLQ", group id "pt-848", generation id 3, group instance id "NULL", current assignment "NULL", subscribed topics "NULL", subscribed topic regex "NULL", remote assignor "NULL"',
    "%7|1795474375.196|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Revoking assignment as lost an rejoining in join state steady",
    '%7|1795474375.196|REBALANCE|consumer-2#consumer-1| [thrd:main]: Group "pt-848" initiating rebalance (COOPERATIVE) in state up (join-state steady) with 2 assigned partition(s) (lost): member fenced - rejoining',
    '%7|1795474375.196|LOST|consumer-2#consumer-1| [thrd:main]: Group "pt-848": current assignment of 2 partition(s) lost: member fenced - rejoining: revoking incremental assignment and rejoining',
    '%7|1795474375.196|REBALANCE|consumer-2#consumer-1| [thrd:main]: Group "pt-848": revoking all 2 partition(s) (assignment lost)',
    "%7|1795474375.211|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Expediting next heartbeat, with backoff 830: OffsetCommit error: Unknown member",
    '%7|1795474375.212|LOST|consumer-2#consumer-1| [thrd:main]: Group "pt-848": current assignment no longer considered lost: incremental unassign done',
    '%7|1795474375.212|REJOIN|consumer-2#consumer-1| [thrd:main]: Group "pt-848": Rejoining group without an assignment: Incremental unassignment done',
    "%7|1795474375.212|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Expediting next heartbeat, with backoff 820: rejoining",
    '%7|1795474375.213|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: GroupCoordinator/3: ConsumerGroupHeartbeat of member id "kle7bn+hS5q/hCs2WjXVLQ", group id "pt-848", generation id 0, group instance id "(null)", current assignment "", subscribed topics "events((null))[-1]", subscribed topic regex "", remote assignor "uniform"',
    '%7|1795474375.291|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: ConsumerGroupHeartbeat response received for member id "kle7bn+hS5q/hCs2WjXVLQ" with epoch 5',
    '%7|1795474375.291|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: ConsumerGroupHeartbeat received target assignment ""',
    '%7|1795474376.214|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: GroupCoordinator/3: ConsumerGroupHeartbeat of member id "kle7bn+hS5q/hCs2WjXVLQ", group id "pt-848", generation id 5, group instance id "(null)", current assignment "", subscribed topics "events((null))[-1]", subscribed topic regex "", remote assignor "uniform"',
    '%7|1795474376.233|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: ConsumerGroupHeartbeat response received for member id "kle7bn+hS5q/hCs2WjXVLQ" with epoch 5',
    '%7|1795474376.233|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: ConsumerGroupHeartbeat received target assignment "(null)(ibCQL7VET5OTR7FgwikoVw)[4], (null)(ibCQL7VET5OTR7FgwikoVw)[5]"',
    '%7|1795474376.233|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Reconciliation starts with new target assignment "events(ibCQL7VET5OTR7FgwikoVw)[4], events(ibCQL7VET5OTR7FgwikoVw)[5]". Next assignment cleared',
    "%7|1795474376.238|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Expediting next heartbeat, with backoff 0: Assignment Done: in steady state, waiting for ack",
    '%7|1795474376.238|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Acknowledging target assignment "events(ibCQL7VET5OTR7FgwikoVw)[4], events(ibCQL7VET5OTR7FgwikoVw)[5]"',
    '%7|1795474376.238|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: GroupCoordinator/3: ConsumerGroupHeartbeat of member id "kle7bn+hS5q/hCs2WjXVLQ", group id "pt-848", generation id 5, group instance id "NULL", current assignment "events(ibCQL7VET5OTR7FgwikoVw)[4], events(ibCQL7VET5OTR7FgwikoVw)[5]", subscribed topics "NULL", subscribed topic regex "NULL", remote assignor "NULL"',
    '%7|1795474376.262|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: ConsumerGroupHeartbeat response received for member id "kle7bn+hS5q/hCs2WjXVLQ" with epoch 5',
    '%7|1795474376.262|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Target assignment acked, new current assignment  "events(ibCQL7VET5OTR7FgwikoVw)[4], events(ibCQL7VET5OTR7FgwikoVw)[5]"',
    '%7|1795474403.595|UNSUBSCRIBE|consumer-2#consumer-1| [thrd:main]: Group "pt-848": unsubscribe from current subscription of size 1 (leave group=true, has joined=true, kle7bn+hS5q/hCs2WjXVLQ, join-state steady)',
    '%7|1795474403.595|REBALANCE|consumer-2#consumer-1| [thrd:main]: Group "pt-848" initiating rebalance (COOPERATIVE) in state up (join-state steady) with 2 assigned partition(s): unsubscribe',
    '%7|1795474403.595|REBALANCE|consumer-2#consumer-1| [thrd:main]: Group "pt-848": revoking all 2 partition(s) (terminating)',
    '%7|1795474403.596|LEAVE|consumer-2#consumer-1| [thrd:main]: Group "pt-848": leave (in state up)',
    '%7|1795474403.596|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: GroupCoordinator/3: ConsumerGroupHeartbeat of member id "kle7bn+hS5q/hCs2WjXVLQ", group id "pt-848", generation id -1, group instance id "(null)", current assignment "NULL", subscribed topics "NULL", subscribed topic regex "NULL", remote assignor "NULL"',
    '%7|1795474403.597|NOREJOIN|consumer-2#consumer-1| [thrd:main]: Group "pt-848": Not rejoining group without an assignment: Unassignment done: no subscribed topics',
    "%7|1795474403.597|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: Expediting next heartbeat, with backoff 0: rejoining",
    "%7|1795474403.653|LEAVEGROUP|consumer-2#consumer-1| [thrd:main]: ConsumerGroupHeartbeat response received in state up",
    '%7|1795474403.653|COORDCLEAR|consumer-2#consumer-1| [thrd:main]: Group "pt-848" broker 127.0.0.1:15493/3 is no longer coordinator',
    '%7|1795474403.658|MEMBERID|consumer-2#consumer-1| [thrd:app]: Group "pt-848": updating member id "kle7bn+hS5q/hCs2WjXVLQ" -> "(not-set)"',
]

MULTI_TOPIC = [
    '%7|1795474357.564|SUBSCRIPTION|consumer-1#consumer-2| [thrd:main]: Group "multi": effective subscription list changed from 0 to 2 topic(s):',
    "%7|1795474357.564|SUBSCRIPTION|consumer-1#consumer-2| [thrd:main]:  Topic events with 4 partition(s)",
    "%7|1795474357.564|SUBSCRIPTION|consumer-1#consumer-2| [thrd:main]:  Topic events-2 with 4 partition(s)",
    '%7|1795474357.564|JOIN|consumer-1#consumer-2| [thrd:main]: Group "multi": join with 2 subscribed topic(s)',
    '%7|1795474357.564|JOIN|consumer-1#consumer-2| [thrd:main]: 127.0.0.1:38723/1: Joining group "multi" with 2 subscribed topic(s) and member id ""',
]
# Warnings of the KIP-848 run: librdkafka's level 4 is a warning, level 5 a notice.
REQTMOUT_WARNING = "%4|1795474382.524|REQTMOUT|consumer-1#consumer-1| [thrd:GroupCoordinator]: GroupCoordinator/3: Timed out 1 in-flight, 0 retry-queued, 0 out-queue, 0 partially-sent requests"
REQTMOUT_NOTICE = "%5|1795474382.524|REQTMOUT|consumer-1#consumer-1| [thrd:GroupCoordinator]: GroupCoordinator/3: Timed out ConsumerGroupHeartbeatRequest in flight (after 1001ms, timeout #0): possibly held back by preceeding OffsetCommitRequest with timeout in 58703ms"

FIRST = "consumer-2-bb68dae4-3034-4d53-bdde-621fa7297077"  # EAGER, before its session timed out
SECOND = "consumer-2-5968e4dd-a1a0-4143-b990-792785096e03"  # EAGER, after
EAGER_LEADER = "consumer-1-4487e3a9-242f-4bed-b63c-7472527161de"
COOP_MEMBER = "consumer-2-83c53ae8-b2fb-4690-9115-216b8c6b9c78"
COOP_LEADER = "consumer-1-979dacee-0101-4248-b78b-4405644582fc"
KIP848_MEMBER = "kle7bn+hS5q/hCs2WjXVLQ"
SESSION_TIMED_OUT = (
    "Consumer group session timed out (in join-state steady) after {ms} ms without a successful "
    "response from the group coordinator (broker {broker}, last error was Success)"
)


class Member:
    """What GroupLogReader needs of a member: its group state, and where events go. Each event
    is recorded with the generation and member id it was written with (the history stamps the
    member's on every event; group_joined names the ones it joined with)."""

    def __init__(self, assignor: str = "range", generation: int | None = None, member_id: str | None = None):
        self.generation, self.member_id = generation, member_id
        protocol = {"cooperative-sticky": "classic-cooperative", "uniform": "consumer"}.get(assignor, "classic-eager")
        self.spec = type("Spec", (), {"assignor": assignor, "incremental": GENERATIONS[protocol].incremental})()
        self.recording = Recording(lambda: (self.member_id, self.generation))
        self.joins = 0

    @property
    def events(self) -> list[tuple]:
        """(name, the instant librdkafka made its line, generation, member id, what the reader said)."""
        return [
            (
                e["name"],
                e["ts"],
                e["generation"],
                e["member_id"],
                {k: v for k, v in e.items() if k not in STAMPED | {"name"}},
            )
            for e in self.recording.written
        ]

    def join_sent(self) -> None:
        self.joins += 1


def read(lines: list[str], member: Member | None = None) -> Member:
    member = member or Member()
    reader = GroupLogReader(member, member.recording.events)
    for text in lines:
        line = parse_line(text)
        assert line is not None, text
        reader(line)
    return member


def joined(member_id: str, leader_id: str | None, protocol: str) -> dict:
    """group_joined's fields beside its generation and member id."""
    return {"leader_id": leader_id, "is_leader": leader_id == member_id, "protocol_name": protocol}


# --------------------------------------------------------------------- whole stories


def test_an_eager_member_learns_each_generation_and_its_new_member_id_after_a_session_timeout():
    m = read(EAGER)
    assert m.events == [
        ("subscription_changed", 1795474203201.0, None, None, {"topics": {"events": 6}}),
        (
            "rebalance_started",
            1795474203201.0,
            None,
            None,
            {"reason": "Metadata for subscribed topic(s) has changed", "rebalance_protocol": "NONE"},
        ),
        ("group_join_sent", 1795474203201.0, None, None, {}),
        ("group_join_failed", 1795474203350.0, None, None, {"error": "Group member needs a valid member ID"}),
        ("group_join_sent", 1795474203350.0, None, None, {}),
        ("group_joined", 1795474203466.0, 1, FIRST, joined(FIRST, FIRST, "range")),
        (
            "group_sync_failed",
            1795474203553.0,
            1,
            FIRST,
            {"error": "Broker: Group rebalance in progress (0 bytes of MemberState data)"},
        ),
        ("group_join_sent", 1795474203553.0, 1, FIRST, {}),
        ("group_joined", 1795474203558.0, 2, FIRST, joined(FIRST, FIRST, "range")),
        (
            "group_sync_failed",
            1795474203687.0,
            2,
            FIRST,
            {"error": "Broker: Group rebalance in progress (0 bytes of MemberState data)"},
        ),
        ("group_join_sent", 1795474203687.0, 2, FIRST, {}),
        ("group_joined", 1795474205548.0, 3, FIRST, joined(FIRST, FIRST, "range")),
        ("group_synced", 1795474205581.0, 3, FIRST, {}),
        (
            "client_log",
            1795474225811.0,
            3,
            FIRST,
            {
                "level": "WARNING",
                "message": SESSION_TIMED_OUT.format(ms=12188, broker=1) + ": revoking assignment and rejoining group",
            },
        ),
        (
            "rebalance_started",
            1795474225812.0,
            3,
            FIRST,
            {"reason": SESSION_TIMED_OUT.format(ms=12188, broker=1), "rebalance_protocol": "EAGER"},
        ),
        ("heartbeat_failed", 1795474225817.0, 3, FIRST, {"error": "Broker: Unknown member"}),
        # Until a JoinGroup succeeds the member keeps the generation and member id it acted under.
        ("group_join_sent", 1795474225834.0, 3, FIRST, {}),
        ("group_join_failed", 1795474225841.0, 3, FIRST, {"error": "Group member needs a valid member ID"}),
        ("group_join_sent", 1795474225841.0, 3, FIRST, {}),
        ("group_joined", 1795474226631.0, 5, SECOND, joined(SECOND, EAGER_LEADER, "range")),
        ("group_synced", 1795474226640.0, 5, SECOND, {}),
        ("subscription_changed", 1795474254129.0, 5, SECOND, {"topics": {}}),  # the unsubscribe: no rebalance_started
    ]
    assert (m.generation, m.member_id, m.joins) == (5, SECOND, 6)


def test_a_cooperative_member_rejoins_as_a_follower_and_says_its_rebalances_are_cooperative():
    m = read(COOPERATIVE, Member("cooperative-sticky"))
    assert m.events == [
        (
            "client_log",
            1795474290202.0,
            None,
            None,
            {
                "level": "WARNING",
                "message": SESSION_TIMED_OUT.format(ms=12472, broker=3) + ": revoking assignment and rejoining group",
            },
        ),
        (
            "rebalance_started",
            1795474290202.0,
            None,
            None,
            {"reason": SESSION_TIMED_OUT.format(ms=12472, broker=3), "rebalance_protocol": "COOPERATIVE"},
        ),
        ("heartbeat_failed", 1795474290210.0, None, None, {"error": "Broker: Unknown member"}),
        ("group_join_sent", 1795474290236.0, None, None, {}),
        ("group_join_failed", 1795474290238.0, None, None, {"error": "Group member needs a valid member ID"}),
        (
            "rebalance_started",
            1795474290238.0,
            None,
            None,
            {"reason": "JoinGroup error", "rebalance_protocol": "COOPERATIVE"},
        ),
        ("group_join_sent", 1795474290238.0, None, None, {}),
        ("group_joined", 1795474290786.0, 4, COOP_MEMBER, joined(COOP_MEMBER, COOP_LEADER, "cooperative-sticky")),
        ("group_synced", 1795474290813.0, 4, COOP_MEMBER, {}),
        ("heartbeat_failed", 1795474291204.0, 4, COOP_MEMBER, {"error": "Broker: Group rebalance in progress"}),
        # A cooperative member told to rebalance rejoins at once: its "Rejoining" line is the only sign.
        (
            "rebalance_started",
            1795474291204.0,
            4,
            COOP_MEMBER,
            {"reason": "Group is rebalancing", "rebalance_protocol": "COOPERATIVE"},
        ),
        ("group_join_sent", 1795474291315.0, 4, COOP_MEMBER, {}),
        ("group_joined", 1795474291326.0, 5, COOP_MEMBER, joined(COOP_MEMBER, COOP_LEADER, "cooperative-sticky")),
        ("group_synced", 1795474291349.0, 5, COOP_MEMBER, {}),
    ]
    assert (m.generation, m.member_id, m.joins) == (5, COOP_MEMBER, 3)


def test_a_kip848_member_takes_each_new_epoch_as_its_generation_through_fencing_and_rejoining():
    m = read(KIP848, Member("uniform"))
    sent = [wall_ms for name, wall_ms, *_ in m.events if name == "group_join_sent"]
    assert sent == [1795474353152.0, 1795474375213.0]  # its heartbeats at epoch 0: the first join, the rejoin
    assert [e for e in m.events if e[0] != "group_join_sent"] == [
        ("group_joined", 1795474353330.0, 2, KIP848_MEMBER, joined(KIP848_MEMBER, None, "uniform")),
        ("group_joined", 1795474354272.0, 3, KIP848_MEMBER, joined(KIP848_MEMBER, None, "uniform")),
        ("group_synced", 1795474354596.0, 3, KIP848_MEMBER, {}),  # "Target assignment acked"
        (
            "rebalance_started",
            1795474375196.0,
            3,
            KIP848_MEMBER,
            {"reason": "member fenced - rejoining", "rebalance_protocol": "COOPERATIVE"},
        ),
        # Fenced, it keeps its member id (KIP-848: the member owns it) and comes back at a later epoch.
        ("group_joined", 1795474375291.0, 5, KIP848_MEMBER, joined(KIP848_MEMBER, None, "uniform")),
        ("group_synced", 1795474376262.0, 5, KIP848_MEMBER, {}),
    ]
    assert (m.generation, m.member_id) == (5, KIP848_MEMBER)


def test_a_repeated_epoch_is_not_a_new_generation():
    responses = [line for line in KIP848 if "with epoch 5" in line]
    assert len(responses) == 3
    m = read(responses, Member("uniform"))
    assert [(name, generation) for name, _, generation, *_ in m.events] == [("group_joined", 5)]
    assert m.generation == 5


def test_a_pattern_subscription_lists_every_topic_the_member_subscribed_to():
    m = read(MULTI_TOPIC)
    assert [(name, fields) for name, _, _, _, fields in m.events] == [
        ("subscription_changed", {"topics": {"events": 4, "events-2": 4}}),
        ("group_join_sent", {}),
    ]


def test_a_subscription_is_complete_only_with_its_last_topic_line_whatever_comes_between():
    header, first, second, *_ = MULTI_TOPIC
    between = [line for line in EAGER if "JoinGroup response: GenerationId 1," in line]
    m = read([header, first, *between, second])
    assert [name for name, *_ in m.events] == ["group_joined", "subscription_changed"]
    assert m.events[1][4] == {"topics": {"events": 4, "events-2": 4}}
    assert m.generation == 1


# --------------------------------------------------------------------- what is not the group's story


def facility(text: str) -> str:
    return text.split("|")[2]


# Facilities whose lines never make an event, whatever they say about members and generations.
QUIET_FACILITIES = {
    "MEMBERID",
    "CGRPCOORD",
    "COORDSET",
    "COORDCLEAR",
    "REJOIN",
    "GRPLEADER",
    "GRPSYNC",
    "LOST",
    "LEAVE",
    "LEAVEGROUP",
    "NOREJOIN",
    "UNSUBSCRIBE",
    "SUBSCRIBE",
    "INIT",
    "FAIL",
}
# Lines of the group's own facilities that must not be read as a step either.
QUIET_LINES = [
    # A classic heartbeat names the generation it is sent in: not a new one.
    '%7|1795474205.581|HEARTBEAT|consumer-2#consumer-1| [thrd:main]: GroupCoordinator/1: Heartbeat for group "smoke" generation id 3',
    *(line for line in EAGER if "I am elected leader" in line or "already in progress, skipping" in line),
    *(line for line in EAGER if "join with" in line or "postponing join" in line),
    *(line for line in COOPERATIVE if "revoking all" in line),
    # KIP-848: the leaving request (epoch -1); "received target assignment" is not acked yet (requests: below).
    *(line for line in KIP848 if "ConsumerGroupHeartbeat of member id" in line and "generation id -1," in line),
    *(
        line
        for line in KIP848
        if "received target assignment" in line
        or "Reconciliation starts" in line
        or "Expediting next heartbeat" in line
        or "Acknowledging target assignment" in line
    ),
    REQTMOUT_NOTICE,
]
# "Rejoining group …" is a REJOIN line that is a step: the start of a rebalance, unless one is on already.
REJOINING = [line for line in EAGER + COOPERATIVE + KIP848 if "Rejoining group" in line]
QUIET = [
    line for line in EAGER + COOPERATIVE + KIP848 if facility(line) in QUIET_FACILITIES and line not in REJOINING
] + QUIET_LINES


def test_the_quiet_lines_are_many_and_of_every_kind():
    assert len(QUIET) > 60
    assert {facility(line) for line in QUIET} == QUIET_FACILITIES | {
        "HEARTBEAT",
        "JOIN",
        "JOINGROUP",
        "REBALANCE",
        "REQTMOUT",
    }


@pytest.mark.parametrize("text", QUIET, ids=lambda text: f"{facility(text)}-{text[3:17]}")
def test_other_lines_make_no_event_and_leave_generation_and_member_id_alone(text):
    m = read([text], Member("range", generation=7, member_id="consumer-2-settled"))
    assert (m.events, m.generation, m.member_id, m.joins) == ([], 7, "consumer-2-settled", 0)


# KIP-848 requests carry the epoch the member is at: the one it already read, from the response that gave
# it (librdkafka 2.10 on); librdkafka before 2.10 says it there only (test_client_log_versions).
REQUESTS = [line for line in KIP848 if re.search(r'ConsumerGroupHeartbeat of member id ".*generation id [1-9]', line)]


@pytest.mark.parametrize("text", REQUESTS, ids=lambda text: text[3:17])
def test_a_request_in_the_members_own_epoch_makes_no_event(text):
    said = re.search(r'member id "(?P<member>[^"]+)".*generation id (?P<epoch>\d+),', text)
    m = read([text], Member("uniform", generation=int(said["epoch"]), member_id=said["member"]))
    assert (m.events, m.generation, m.member_id, m.joins) == ([], int(said["epoch"]), said["member"], 0)


@pytest.mark.parametrize("text", REJOINING, ids=lambda text: text[3:17])
def test_a_settled_member_rejoining_starts_a_rebalance_with_the_reason_librdkafka_gives(text):
    m = read([text], Member("range", generation=7, member_id="consumer-2-settled"))
    [(name, wall_ms, generation, member_id, fields)] = m.events
    assert (name, wall_ms, generation, member_id) == (
        "rebalance_started",
        parse_line(text).wall_ms,
        7,
        "consumer-2-settled",
    )
    reason = re.split(r"(?:owned partition\(s\)|without an assignment): ", text, maxsplit=1)[1]
    assert fields == {"reason": reason, "rebalance_protocol": "EAGER"}


def test_a_warning_of_any_facility_is_a_client_log_event_a_notice_is_not():
    m = read([REQTMOUT_NOTICE, REQTMOUT_WARNING])
    assert m.events == [
        (
            "client_log",
            1795474382524.0,
            None,
            None,
            {
                "level": "WARNING",
                "message": "GroupCoordinator/3: Timed out 1 in-flight, 0 retry-queued, 0 out-queue, 0 partially-sent requests",
            },
        )
    ]


# --------------------------------------------------------------------- torn and odd lines


def cut(line: str, before: str) -> str:
    """The line as if its writer had stopped just before ``before``."""
    assert before in line
    return line[: line.index(before)]


JOINED_GEN_3 = next(line for line in EAGER if "JoinGroup response: GenerationId 3," in line)
EPOCH_3 = next(line for line in KIP848 if "with epoch 3" in line)


@pytest.mark.parametrize(
    "text",
    [
        cut(JOINED_GEN_3, ", member metadata count"),  # no result yet: not a join, failed or not
        cut(JOINED_GEN_3, "my MemberId"),
        cut(JOINED_GEN_3, "(no error)") + "(no",  # a truncated result is not "(no error)"
        cut(EPOCH_3, " with epoch"),
        EPOCH_3[:-1],  # "with epoch " and no number
        cut(next(line for line in EAGER if "SyncGroup response: Success" in line), "SyncGroup"),
    ],
)
def test_a_torn_line_never_makes_a_generation_or_a_member_id(text):
    m = read([text], Member("range", generation=2, member_id="consumer-2-before"))
    assert (m.generation, m.member_id) == (2, "consumer-2-before")
    assert all(name not in ("group_joined", "group_synced") for name, *_ in m.events)


@pytest.mark.parametrize(
    "text",
    [
        JOINED_GEN_3[1:],  # its head lost
        JOINED_GEN_3.replace("|1795474205.548|", "|1795474205.54|"),  # milliseconds are three digits
        JOINED_GEN_3.replace("consumer-1| [thrd", "consumer-1|[thrd"),  # the space before the message
        JOINED_GEN_3.replace("%7|", "%7 |"),
        "RAW " + JOINED_GEN_3,
    ],
)
def test_a_line_that_is_not_in_librdkafkas_format_is_not_a_client_line(text):
    assert parse_line(text) is None


def test_a_torn_topic_line_leaves_the_subscription_open_until_the_next_header():
    header, first, second, *_ = MULTI_TOPIC
    m = read([header, first, cut(second, " with 4")])
    assert m.events == []
    m = read([header, first, cut(second, " with 4"), *MULTI_TOPIC[:3]])
    assert [fields for name, _, _, _, fields in m.events] == [{"topics": {"events": 4, "events-2": 4}}]
