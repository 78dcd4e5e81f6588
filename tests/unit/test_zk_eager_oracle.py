"""How the oracle reads zk-eager generations: the cversion of /consumers/<g>/ids, with the
membership each consumer computed its share from (`members` in `group_joined`)."""

from oracle import check_history
from oracle.history import History
from oracle.rebalances import COMPLETED, SUPERSEDED, rebalances_of

CHECK = "assignment-validity"
IDS = {"consumer-1": "consumer-1-aaaa", "consumer-2": "consumer-2-bbbb", "consumer-3": "consumer-3-cccc"}


def joined(c, generation: int, *names: str):
    """A zk-eager join: the consumer read the ids children (and their cversion) it computes from."""
    c.joined(generation, member_id=IDS[c.name])
    c.history.events[-1]["members"] = [IDS[n] for n in names]
    return c


def three_consumers(history_builder):
    b = history_builder(topics={"events": 6}, protocol="zk-eager")
    for name in IDS:
        b.consumer(name).start()
    return b


def test_a_generation_one_consumer_never_acted_on_is_not_complete(history_builder):
    """consumer-3 was backing off while the ids changed to cversion 5: consumer-1 and -2 claimed
    their thirds of it, consumer-3's third stayed unclaimed until everyone moved to 6."""
    b = three_consumers(history_builder)
    c1, c2, c3 = (b[n] for n in IDS)
    everyone = tuple(IDS)
    b.at(100)
    joined(c1, 5, *everyone).synced().assigned(0, 1)
    joined(c2, 5, *everyone).synced().assigned(2, 3)
    b.at(900)
    for c, share in ((c1, (0, 1)), (c2, (2, 3)), (c3, (4, 5))):
        if c.owned:
            c.revoked()
        joined(c, 6, *everyone).synced().assigned(*share)

    result = check_history(b.build(), {CHECK: {}}).checks[CHECK]
    statuses = {r.generation: r.status for r in rebalances_of(History(b.build()))}
    assert statuses == {5: SUPERSEDED, 6: COMPLETED}
    assert result.violations == []
    assert result.detail["layouts_checked"] == [6]


def test_range_layout_is_checked_over_consumer_ids(history_builder):
    """Range over the sorted consumer threads, as the oracle defines it independently."""
    b = three_consumers(history_builder)
    everyone = tuple(IDS)
    b.at(100)
    joined(b["consumer-1"], 2, *everyone).synced().assigned(0, 1)
    joined(b["consumer-2"], 2, *everyone).synced().assigned(4, 5)  # swapped with consumer-3
    joined(b["consumer-3"], 2, *everyone).synced().assigned(2, 3)

    result = check_history(b.build(), {CHECK: {}}).checks[CHECK]
    assert result.detail["layouts_checked"] == [2]
    assert sorted(v.kind for v in result.violations) == ["layout-mismatch", "layout-mismatch"]
