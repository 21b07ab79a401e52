"""gokafkad dev driven from pytest through its HTTP control API, with kafka-python
watching the effect (compat/cases_dev.go runs it; written from the README's
"In any language: gokafkad dev" section).

    GOKAFKAD=path/to/gokafkad python -m pytest compat/python/test_devapi.py

The module starts one `gokafkad dev --brokers 3` on free ports and stops it with
SIGTERM at the end; every test leaves the cluster healthy for the next.
"""
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import (KafkaConnectionError, KafkaTimeoutError, NotEnoughReplicasError, RequestTimedOutError,
                          SaslAuthenticationFailedError)
from kafka.structs import OffsetAndMetadata, TopicPartition

TOPIC = "orders"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_run(n):
    """The first of n consecutive loopback ports that are free now."""
    for _ in range(50):
        first = free_port()
        try:
            socks = []
            for i in range(n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", first + i))
            return first
        except OSError:
            pass
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no %d consecutive free ports" % n)


class Dev:
    """A running gokafkad dev: its bootstrap servers and control API."""

    def __init__(self, proc, bootstrap, api):
        self.proc, self.bootstrap, self.api = proc, bootstrap, api

    def call(self, method, path, body=None, want=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.api + path, data=data, method=method)
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                status, text = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read()
        doc = json.loads(text)
        if want is not None:
            assert status == want, "%s %s: %d %s" % (method, path, status, doc)
        return doc

    def partition(self):
        return self.call("GET", "/v1/partitions/%s/0" % TOPIC, want=200)

    def node(self, node_id):
        nodes = self.call("GET", "/v1/cluster", want=200)["nodes"]
        return next(n for n in nodes if n["id"] == node_id)


def wait_for(what, cond, timeout=60):
    deadline = time.monotonic() + timeout  # the wall clock may be stepped
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %ds waiting for %s" % (timeout, what))
        time.sleep(0.05)


def start_dev(brokers, *flags):
    """Starts gokafkad dev with brokers brokers and flags on free ports; returns the
    process and the lines it printed (bootstrap servers, CA, control API, data)."""
    binary = os.environ.get("GOKAFKAD", "gokafkad")
    port, http = free_port_run(brokers), "127.0.0.1:%d" % free_port()
    proc = subprocess.Popen(
        [binary, "dev", "--brokers", str(brokers), "--port", str(port), "--http", http] + list(flags),
        stdout=subprocess.PIPE, text=True)
    lines = {}
    for line in proc.stdout:
        m = re.match(r"(bootstrap servers|CA|control API|data): (\S+)", line)
        if m:
            lines[m.group(1)] = m.group(2)
        if "data" in lines:
            break
    assert "control API" in lines, "gokafkad dev printed %r" % lines
    return proc, lines


def stop_dev(proc, lines):
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    rest = proc.stdout.read()
    assert "gokafkad dev: stopped" in rest
    assert not os.path.exists(lines["data"].split(" ")[0]), "data left behind"


@pytest.fixture(scope="module")
def dev_cluster():
    proc, lines = start_dev(3, "--override", "replica.lag.time.max.ms=1000")
    d = Dev(proc, lines["bootstrap servers"], lines["control API"].rsplit("/v1/", 1)[0])
    admin = KafkaAdminClient(bootstrap_servers=d.bootstrap, request_timeout_ms=20000)
    admin.create_topics([NewTopic(TOPIC, 1, 3)])
    admin.close()
    wait_for("a leader and a full ISR", lambda: d.partition()["leader"] >= 0 and len(d.partition()["isr"]) == 3)
    yield d
    stop_dev(proc, lines)


@pytest.fixture
def dev(dev_cluster):
    """The module's cluster made healthy before each test: every broker running and
    resumed, every link healed, every fault deleted, the ISR full, so a test that failed
    half-way (a broker left paused, a link cut) fails its own row and not the next ones."""
    d = dev_cluster
    for n in d.call("GET", "/v1/cluster", want=200)["nodes"]:
        if not n["running"]:
            d.call("POST", "/v1/brokers/%d/restart" % n["id"], want=200)
        elif n["paused"]:
            d.call("POST", "/v1/brokers/%d/resume" % n["id"], want=200)
    if d.call("GET", "/v1/links", want=200)["links"]:
        d.call("POST", "/v1/links/heal", want=200)
    d.call("DELETE", "/v1/faults", want=200)
    d.call("POST", "/v1/partitions/%s/0/wait" % TOPIC, {"isr": [0, 1, 2]}, want=200)
    return d


def producer(d, **kw):
    conf = dict(bootstrap_servers=d.bootstrap, acks="all", request_timeout_ms=5000,
                retry_backoff_ms=200, metadata_max_age_ms=1000)
    conf.update(kw)
    return KafkaProducer(**conf)


def test_pause_leader(dev):
    """Pause the leader: the acks=all produce waits, then the client finds the new
    leader (elected once the paused broker was fenced) and succeeds."""
    p = producer(dev, retries=20)
    try:
        p.send(TOPIC, b"before").get(timeout=60)
        leader = dev.partition()["leader"]
        node = dev.call("POST", "/v1/brokers/%d/pause" % leader, want=200)
        assert node["paused"] and node["running"]
        dev.call("POST", "/v1/brokers/%d/pause" % leader, want=409)
        start = time.monotonic()  # not time.time: the machine's clock may be stepped
        p.send(TOPIC, b"during").get(timeout=90)
        assert time.monotonic() - start > 1, "a produce to a paused leader answered at once"
        now = dev.partition()
        assert now["leader"] not in (-1, leader), now
        wait_for("the paused broker fenced", lambda: dev.node(leader)["fenced"])
        dev.call("POST", "/v1/brokers/%d/resume" % leader, want=200)
        part = dev.call("POST", "/v1/partitions/%s/0/wait" % TOPIC, {"isr": [0, 1, 2]}, want=200)
        assert sorted(part["isr"]) == [0, 1, 2], part
    finally:
        p.close()


def test_produce_fault(dev):
    """A Produce fault: a client that does not retry sees NOT_ENOUGH_REPLICAS, the
    fault counts it, and once deleted the produce succeeds."""
    fault = dev.call("POST", "/v1/faults", {"api_key": "Produce", "error": "NOT_ENOUGH_REPLICAS", "topic": TOPIC},
                     want=201)
    p = producer(dev, retries=0)
    try:
        with pytest.raises(NotEnoughReplicasError):
            p.send(TOPIC, b"refused").get(timeout=60)
        got = dev.call("GET", "/v1/faults/%d" % fault["id"], want=200)
        assert got["fired"] >= 1 and got["active"], got
        dev.call("DELETE", "/v1/faults/%d" % fault["id"], want=200)
        p.send(TOPIC, b"accepted").get(timeout=60)
    finally:
        p.close()
    dev.call("GET", "/v1/faults/%d" % fault["id"], want=404)


def test_kill_restart_follower(dev):
    """Kill a follower, write without it, restart it: it comes back on its port and
    catches up, every replica with the same log end."""
    part = dev.partition()
    follower = next(r for r in part["replicas"] if r != part["leader"])
    address = dev.node(follower)["address"]
    assert not dev.call("POST", "/v1/brokers/%d/kill" % follower, want=200)["running"]
    p = producer(dev, retries=20)
    try:
        p.send(TOPIC, b"without the follower").get(timeout=60)
    finally:
        p.close()
    node = dev.call("POST", "/v1/brokers/%d/restart" % follower, want=200)
    assert node["running"] and node["address"] == address, node

    def caught_up():
        part = dev.partition()
        leos = {r["log_end_offset"] for r in part["replica_states"]}
        return len(part["isr"]) == 3 and len(leos) == 1 and all(r["running"] for r in part["replica_states"])

    wait_for("every replica caught up and in the ISR", caught_up)


def test_move_leader(dev):
    """Move the leadership to a follower: the answer names it, the producer's next
    acks=all write goes to it (the old leader answers NOT_LEADER and the client
    refreshes its metadata), and the partition keeps its three in-sync replicas."""
    part = dev.partition()
    target = next(r for r in part["isr"] if r != part["leader"])
    p = producer(dev, retries=20)
    try:
        p.send(TOPIC, b"before the move").get(timeout=60)
        moved = dev.call("POST", "/v1/partitions/%s/0/move-leader" % TOPIC, {"to": target}, want=200)
        assert moved["leader"] == target, moved
        meta = p.send(TOPIC, b"after the move").get(timeout=60)
        assert meta.partition == 0
        wait_for("the producer's metadata to name the new leader",
                 lambda: p._metadata.leader_for_partition(meta.topic_partition) == target)
        wait_for("three in-sync replicas", lambda: len(dev.partition()["isr"]) == 3)
    finally:
        p.close()


def test_group_members(dev):
    """A consumer in a group shows up in /v1/groups/{id} as a member of a stable group
    with its client id and partition 0 assigned, and the offset it commits with its lag."""
    group = "pytest-group"
    c = KafkaConsumer(bootstrap_servers=dev.bootstrap, group_id=group, client_id="pytest-consumer",
                      auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        # The topic's metadata first, so the first assignment already has its partition.
        wait_for("the topic's metadata", lambda: c.partitions_for_topic(TOPIC))
        c.subscribe([TOPIC])
        wait_for("an assignment", lambda: c.poll(timeout_ms=200) is not None and c.assignment())

        def stable():
            g = dev.call("GET", "/v1/groups/%s" % group)
            return g.get("state") == "Stable" and g

        g = wait_for("the group stable in /v1/groups", stable)
        assert len(g["members"]) == 1, g
        member = g["members"][0]
        assert member["client_id"] == "pytest-consumer", member
        assert member["assignment"].get(TOPIC) == [0], member
        assert any(group == x["group_id"] for x in dev.call("GET", "/v1/groups", want=200)["groups"])
        c.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(1, "", -1)})

        def committed():
            offs = dev.call("GET", "/v1/groups/%s" % group).get("offsets") or []
            return next((o for o in offs if o["topic"] == TOPIC and o["partition"] == 0 and o["offset"] == 1), None)

        o = wait_for("the committed offset listed", committed)
        assert o["lag"] == o["end_offset"] - 1 and o["end_offset"] >= 1, o
    finally:
        c.close()


def get_text(url):
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()


def full_isr(dev):
    part = dev.call("POST", "/v1/partitions/%s/0/wait" % TOPIC, {"isr": [0, 1, 2]}, want=200)
    assert sorted(part["isr"]) == [0, 1, 2], part


def test_isolate_leader(dev):
    """Isolate the leader (cut from every node and client): kafka-python's acks=all send
    times out on it, refreshes its metadata from the other brokers and fails over to
    the new leader, elected once the isolated broker was fenced; after the heal the old
    leader catches up and rejoins the ISR."""
    p = producer(dev, retries=20)
    try:
        p.send(TOPIC, b"before").get(timeout=60)
        leader = dev.partition()["leader"]
        dev.call("POST", "/v1/brokers/%d/isolate" % leader, want=200)
        links = dev.call("GET", "/v1/links", want=200)["links"]
        assert any(l["cut"] and leader in (l["from"], l["to"]) for l in links), links
        meta = p.send(TOPIC, b"during").get(timeout=90)
        now = dev.partition()
        assert now["leader"] not in (-1, leader), now
        assert meta.offset >= 1
        wait_for("the producer's metadata to name the new leader",
                 lambda: p._metadata.leader_for_partition(meta.topic_partition) == now["leader"])
        dev.call("POST", "/v1/brokers/%d/heal" % leader, want=200)
        assert dev.call("GET", "/v1/links", want=200)["links"] == []
        full_isr(dev)
        p.send(TOPIC, b"after").get(timeout=60)
    finally:
        p.close()


def test_fault_delay_and_drop(dev):
    """A Produce delay fault holds the client's request that long; a drop fault closes
    its connection, which a producer that does not retry sees as a connection error;
    each fires once (times: 1) and is then inactive."""
    p = producer(dev, retries=0)
    try:
        p.send(TOPIC, b"warm-up").get(timeout=60)
        delay = dev.call("POST", "/v1/faults", {"api_key": "Produce", "delay_ms": 1500, "topic": TOPIC,
                                                "from_clients": True, "times": 1}, want=201)
        start = time.monotonic()
        p.send(TOPIC, b"delayed").get(timeout=60)
        took = time.monotonic() - start
        assert took >= 1.5, "the delayed produce answered after %.2fs" % took
        got = dev.call("GET", "/v1/faults/%d" % delay["id"], want=200)
        assert got["fired"] == 1 and not got["active"], got
        drop = dev.call("POST", "/v1/faults", {"api_key": "Produce", "drop": True, "topic": TOPIC,
                                               "from_clients": True, "times": 1}, want=201)
        with pytest.raises(KafkaConnectionError):
            p.send(TOPIC, b"dropped").get(timeout=60)
        got = dev.call("GET", "/v1/faults/%d" % drop["id"], want=200)
        assert got["fired"] == 1 and not got["active"], got
        p.send(TOPIC, b"after").get(timeout=60)
    finally:
        p.close()
    dev.call("DELETE", "/v1/faults", want=200)


def test_link_delay_and_cut(dev):
    """A delay on the link between the clients and the leader holds the producer's
    request and answer 800 ms each; a one-way cut from the clients to it makes a
    producer that does not retry time out; healed, it writes again."""
    leader = dev.partition()["leader"]
    p = producer(dev, retries=0)
    try:
        p.send(TOPIC, b"before").get(timeout=60)
        dev.call("POST", "/v1/links/delay", {"from": "clients", "to": leader, "delay_ms": 800}, want=200)
        links = dev.call("GET", "/v1/links", want=200)["links"]
        assert any(l["delay_ms"] == 800 and l["from"] == "clients" and l["to"] == leader for l in links), links
        start = time.monotonic()
        p.send(TOPIC, b"delayed").get(timeout=60)
        took = time.monotonic() - start
        assert took >= 1.6, "a produce over a link delayed 800 ms each way answered after %.2fs" % took
        dev.call("POST", "/v1/links/heal", want=200)
        dev.call("POST", "/v1/links/cut", {"from": "clients", "to": leader, "one_way": True}, want=200)
        with pytest.raises((RequestTimedOutError, KafkaTimeoutError)):
            p.send(TOPIC, b"cut").get(timeout=60)
        dev.call("POST", "/v1/links/heal", want=200)
        assert dev.call("GET", "/v1/links", want=200)["links"] == []
        p.send(TOPIC, b"healed").get(timeout=60)
    finally:
        p.close()


def test_shuffle_shutdown_elect_preferred(dev):
    """Shuffle moves the leadership to another in-sync replica, its new preferred one
    (the producer follows it); a controlled shutdown of that broker moves it away at
    once; restarted and back in the ISR, elect-preferred gives it the leadership again,
    and the producer's next write goes there."""
    p = producer(dev, retries=20)
    try:
        before = dev.partition()
        shuffled = dev.call("POST", "/v1/leaders/shuffle", {"topics": [TOPIC]}, want=200)
        moves = [m for m in shuffled["moves"] if m["topic"] == TOPIC]
        assert len(moves) == 1 and moves[0]["from"] == before["leader"] and moves[0]["to"] != before["leader"], shuffled
        preferred = moves[0]["to"]
        assert dev.partition()["replicas"][0] == preferred
        meta = p.send(TOPIC, b"after the shuffle").get(timeout=60)
        wait_for("the producer on the shuffled leader",
                 lambda: p._metadata.leader_for_partition(meta.topic_partition) == preferred)
        assert not dev.call("POST", "/v1/brokers/%d/shutdown" % preferred, want=200)["running"]
        assert dev.partition()["leader"] not in (-1, preferred)
        p.send(TOPIC, b"while it is down").get(timeout=60)
        dev.call("POST", "/v1/brokers/%d/restart" % preferred, want=200)
        full_isr(dev)
        elected = dev.call("POST", "/v1/leaders/elect-preferred", {"topics": [TOPIC]}, want=200)
        assert any(m["to"] == preferred for m in elected["moves"]), elected
        assert dev.partition()["leader"] == preferred
        meta = p.send(TOPIC, b"after the election").get(timeout=60)
        wait_for("the producer on the preferred leader",
                 lambda: p._metadata.leader_for_partition(meta.topic_partition) == preferred)
    finally:
        p.close()


def test_shrink_isr(dev):
    """Shrink the ISR by a follower held back by a fault on its replica fetches (a
    link cut between two combined voters would cut the metadata quorum too): acks=all
    writes are then acknowledged by the two replicas left, the follower does not get
    them, and once the fault is deleted it catches up and rejoins."""
    part = dev.partition()
    leader = part["leader"]
    follower = next(r for r in part["replicas"] if r != leader)
    hold = dev.call("POST", "/v1/faults", {"api_key": "Fetch", "error": "UNKNOWN_SERVER_ERROR", "brokers": [leader],
                                           "from_nodes": [follower]}, want=201)
    # A fetch the leader holds (long polling) from before the fault would still bring
    # the follower the next write: once the fault failed one, none is held.
    wait_for("the follower's fetches failed", lambda: dev.call("GET", "/v1/faults/%d" % hold["id"])["fired"] >= 1)
    p = producer(dev, retries=20)
    try:
        shrunk = dev.call("POST", "/v1/partitions/%s/0/shrink-isr" % TOPIC, {"replica": follower}, want=200)
        assert follower not in shrunk["isr"] and len(shrunk["isr"]) == 2, shrunk
        meta = p.send(TOPIC, b"without the follower").get(timeout=60)
        state = next(r for r in dev.partition()["replica_states"] if r["broker"] == follower)
        assert state["log_end_offset"] <= meta.offset, (meta, state)
        dev.call("DELETE", "/v1/faults/%d" % hold["id"], want=200)
        full_isr(dev)
    finally:
        p.close()


def test_open_transaction(dev):
    """A transactional kafka-python producer's open transaction is listed in
    /v1/transactions with its transactional id and partition, and is gone once
    committed."""
    tid = "pytest-txn"
    p = KafkaProducer(bootstrap_servers=dev.bootstrap, transactional_id=tid, request_timeout_ms=10000)
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send(TOPIC, b"in a transaction").get(timeout=60)

        def listed():
            txns = dev.call("GET", "/v1/transactions", want=200)["transactions"]
            return next((t for t in txns if t["transactional_id"] == tid), None)

        t = wait_for("the open transaction listed", listed)
        assert t["state"] == "Ongoing" and any(x["topic"] == TOPIC for x in t["partitions"]), t
        p.commit_transaction()
        wait_for("the committed transaction gone", lambda: listed() is None)
    finally:
        p.close()


def test_status_page(dev):
    """Isolate a follower: the leader's status page (/nodes/{id}/), its JSON and its
    metrics show the partition under-replicated with the follower out of the ISR; after
    the heal they show it whole again."""
    part = dev.partition()
    leader = part["leader"]
    follower = next(r for r in part["replicas"] if r != leader)
    status, ctype, html = get_text(dev.api + "/nodes/%d/" % leader)
    assert status == 200 and ctype.startswith("text/html") and "<html" in html.lower(), ctype
    p = producer(dev, retries=20)
    try:
        p.send(TOPIC, b"before").get(timeout=60)  # connected, with the leader in its metadata
        dev.call("POST", "/v1/brokers/%d/isolate" % follower, want=200)
        p.send(TOPIC, b"while isolated").get(timeout=60)  # answered once the ISR shrank
    finally:
        p.close()

    def shown():
        st = dev.call("GET", "/nodes/%d/v1/status" % leader, want=200)
        ps = [x for x in st["partitions"] if x["topic"] == TOPIC and x["partition"] == 0]
        return ps and ps[0]["role"] == "leader" and follower not in ps[0]["isr"] and ps[0]["under_replicated"] and st

    wait_for("the leader's status showing the shrunk ISR", shown)
    _, _, metrics = get_text(dev.api + "/nodes/%d/metrics" % leader)
    assert "kafka_server_replicamanager_underreplicatedpartitions 1" in metrics
    dev.call("POST", "/v1/brokers/%d/heal" % follower, want=200)
    full_isr(dev)
    wait_for("the status page whole again", lambda: not shown())


def test_secured_dev():
    """A second gokafkad dev with --tls and SASL users: kafka-python logs in over
    SASL_SSL with SCRAM-SHA-512, trusting the printed CA file (also in /v1/cluster);
    a wrong password fails with SASL_AUTHENTICATION_FAILED; after a kill and a restart
    of the broker the producer reconnects with TLS and SASL."""
    proc, lines = start_dev(1, "--tls", "--sasl-users", "alice:alice-secret")
    try:
        api = lines["control API"].rsplit("/v1/", 1)[0]
        d = Dev(proc, lines["bootstrap servers"], api)
        cl = d.call("GET", "/v1/cluster", want=200)
        assert cl["security_protocol"] == "SASL_SSL", cl
        assert cl["sasl_mechanisms"] == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"], cl
        assert cl["ca_file"] == lines["CA"] and os.path.exists(lines["CA"]), (cl, lines)
        secured = dict(bootstrap_servers=d.bootstrap, security_protocol="SASL_SSL", ssl_cafile=lines["CA"],
                       sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice")
        p = KafkaProducer(acks="all", retries=20, request_timeout_ms=5000, retry_backoff_ms=200,
                          reconnect_backoff_max_ms=500, sasl_plain_password="alice-secret", **secured)
        try:
            p.send("secured", b"first").get(timeout=60)  # auto-created
            with pytest.raises((SaslAuthenticationFailedError, KafkaTimeoutError)):
                bad = KafkaProducer(max_block_ms=10000, sasl_plain_password="wrong", **secured)
                bad.close()
            d.call("POST", "/v1/brokers/0/kill", want=200)
            d.call("POST", "/v1/brokers/0/restart", want=200)
            p.send("secured", b"after the restart").get(timeout=60)
        finally:
            p.close()
    finally:
        stop_dev(proc, lines)
