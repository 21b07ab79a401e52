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
from kafka.errors import NotEnoughReplicasError
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
    deadline = time.time() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.time() > deadline:
            raise AssertionError("timed out after %ds waiting for %s" % (timeout, what))
        time.sleep(0.05)


@pytest.fixture(scope="module")
def dev():
    binary = os.environ.get("GOKAFKAD", "gokafkad")
    port, http = free_port_run(3), "127.0.0.1:%d" % free_port()
    proc = subprocess.Popen(
        [binary, "dev", "--brokers", "3", "--port", str(port), "--http", http,
         "--override", "replica.lag.time.max.ms=1000"],
        stdout=subprocess.PIPE, text=True)
    lines = {}
    for line in proc.stdout:
        m = re.match(r"(bootstrap servers|control API|data): (\S+)", line)
        if m:
            lines[m.group(1)] = m.group(2)
        if "data" in lines:
            break
    assert "control API" in lines, "gokafkad dev printed %r" % lines
    d = Dev(proc, lines["bootstrap servers"], lines["control API"].rsplit("/v1/", 1)[0])
    admin = KafkaAdminClient(bootstrap_servers=d.bootstrap, request_timeout_ms=20000)
    admin.create_topics([NewTopic(TOPIC, 1, 3)])
    admin.close()
    wait_for("a leader and a full ISR", lambda: d.partition()["leader"] >= 0 and len(d.partition()["isr"]) == 3)
    yield d
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    rest = proc.stdout.read()
    assert "gokafkad dev: stopped" in rest
    assert not os.path.exists(lines["data"].split(" ")[0]), "data left behind"


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
        start = time.time()
        p.send(TOPIC, b"during").get(timeout=90)
        assert time.time() - start > 1, "a produce to a paused leader answered at once"
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
