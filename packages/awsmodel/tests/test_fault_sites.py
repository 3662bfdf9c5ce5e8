"""The site-keyed fault decision both drivers use (seglog_awsmodel.fault_sites)."""

from __future__ import annotations

from seglog_awsmodel.fault_sites import draw, fires, restart_site, site


def test_a_site_gets_the_same_answer_every_time_and_another_seed_or_site_may_differ() -> None:
    key = site("shard-1", "000123", 1)
    assert [fires(7, "poller_restart", key, 0.5) for _ in range(3)] in ([True] * 3, [False] * 3)
    answers = {fires(seed, "poller_restart", site("shard-1", n), 0.5) for seed in range(5) for n in range(20)}
    assert {True, False} == answers


def test_the_rate_is_the_share_of_sites_that_fire() -> None:
    fired = sum(fires(1, "ddb_5xx", site(n), 0.2) for n in range(5000))
    assert 900 < fired < 1100
    assert not any(fires(1, "ddb_5xx", site(n), 0.0) for n in range(200))
    assert all(fires(1, "ddb_5xx", site(n), 1.0) for n in range(200))


def test_salts_draw_apart_and_site_keys_are_order_free_over_mappings() -> None:
    assert draw(1, "s3_latency", "k", "amount") != draw(1, "s3_latency", "k", "fire")
    assert site({"a": 1, "b": 2}) == site({"b": 2, "a": 1})
    assert 16 == len(site("x"))
    assert "router-shard-1:abc:2" == restart_site("router-shard-1", "abc", 2)


def test_a_restart_site_changes_with_the_incarnation() -> None:
    """The rule of issue 19: a site whose parts restart in a new process carries the incarnation, so a restart
    decided for one incarnation is decided afresh in the next."""
    key = site("000123", 1)
    sites = {restart_site("router-shard-1", key, n) for n in range(10)}
    assert 10 == len(sites)
    assert 1 < sum(fires(5, "poller_restart", s, 0.5) for s in sites) < 10
