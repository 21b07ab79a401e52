"""kafka-python scenario for the compat suite (compat/clients.go reads its output).

    python client.py BOOTSTRAP TOPIC GROUP TXN_TOPIC
    python client.py --security SPEC...

The security mode runs one step per SPEC (see compat/goclients/security.go for the
format): a short produce and group consume over a secured listener, or, with
refused=1, a connection the broker must refuse.

Each step prints one line: RESULT <step> ok | RESULT <step> fail <reason>.
Steps: create-topic, produce-<codec> for every codec, consume-group, resume,
idempotent, txn. A failed step does not stop the later ones.
"""
import base64
import json
import logging
import re
import sys
import time
import traceback

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic

SECURITY = sys.argv[1:2] == ["--security"]
BOOTSTRAP = TOPIC = GROUP = TXN_TOPIC = None
if not SECURITY:
    BOOTSTRAP, TOPIC, GROUP, TXN_TOPIC = sys.argv[1:5]
# SEC is the security spec's settings, added to every client's configuration.
SEC = {}
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PER_CODEC = 10


def result(step, fn):
    try:
        fn()
        print("RESULT %s ok" % step, flush=True)
    except Exception as e:  # every failure is a row, not a crash
        msg = ("%s: %s" % (type(e).__name__, e)).replace("\n", " ")
        print("RESULT %s fail %s" % (step, msg), flush=True)
        traceback.print_exc(file=sys.stderr)


def create_topic():
    admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP, request_timeout_ms=20000)
    try:
        admin.create_topics([NewTopic(TOPIC, 3, 1), NewTopic(TXN_TOPIC, 1, 1)])
        names = admin.list_topics()
        if TOPIC not in names:
            raise AssertionError("created topic not listed: %r" % names)
    finally:
        admin.close()


def produce(codec, keys, extra=None):
    conf = dict(bootstrap_servers=BOOTSTRAP, acks="all", request_timeout_ms=15000, **SEC)
    if codec != "none":
        conf["compression_type"] = codec
    conf.update(extra or {})
    p = KafkaProducer(**conf)
    try:
        futures = []
        for k in keys:
            futures.append(p.send(TOPIC, key=k.encode(), value=("v" + k[1:]).encode(),
                                  headers=[("codec", codec.encode()), ("key", k.encode())]))
        p.flush(timeout=30)
        for f in futures:
            f.get(timeout=30)
    finally:
        p.close(timeout=10)


def codec_keys(codec):
    return ["k-%s-%d" % (codec, i) for i in range(PER_CODEC)]


_DEFAULT = object()


def consume(want, group=_DEFAULT, topic=None, isolation="read_uncommitted", settle=1.5):
    """Reads until every wanted key came, then a little longer to catch extras."""
    group = GROUP if group is _DEFAULT else group
    topic = topic or TOPIC
    c = KafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, isolation_level=isolation, consumer_timeout_ms=500, **SEC)
    got = {}
    deadline = time.time() + 90  # a loaded two-core machine can take most of a minute to join a group
    done_at = None
    try:
        while time.time() < deadline:
            for m in c:
                k = m.key.decode() if m.key is not None else None
                if k in got:
                    raise AssertionError("key %s read twice" % k)
                got[k] = m
            if set(want) <= set(got):
                if done_at is None:
                    done_at = time.time()
                elif time.time() - done_at > settle:
                    break
        if group:
            c.commit()
    finally:
        c.close()
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    if missing or extra:
        raise AssertionError("missing %s, unexpected %s" % (missing[:5], extra[:5]))
    return got


def consume_group():
    want = [k for c in CODECS for k in codec_keys(c)]
    got = consume(want)
    for k, m in got.items():
        if m.value.decode() != "v" + k[1:]:
            raise AssertionError("key %s has value %r" % (k, m.value))
        h = dict(m.headers)
        if h.get("key") != k.encode() or h.get("codec") != k.split("-")[1].encode():
            raise AssertionError("key %s has headers %r" % (k, m.headers))


def resume():
    keys = ["k-resume-%d" % i for i in range(5)]
    produce("none", keys)
    consume(keys)


def idempotent():
    keys = ["k-idem-%d" % i for i in range(5)]
    produce("none", keys, {"enable_idempotence": True})


def txn():
    p = KafkaProducer(bootstrap_servers=BOOTSTRAP, transactional_id="compat-py-" + TXN_TOPIC,
                      request_timeout_ms=15000, max_block_ms=20000)
    try:
        p.init_transactions()
        p.begin_transaction()
        for i in range(3):
            p.send(TXN_TOPIC, key=b"committed-%d" % i, value=b"c")
        p.commit_transaction()
        p.begin_transaction()
        for i in range(2):
            p.send(TXN_TOPIC, key=b"aborted-%d" % i, value=b"a")
        p.abort_transaction()
    finally:
        p.close(timeout=10)
    consume(["committed-%d" % i for i in range(3)], group=None, topic=TXN_TOPIC, isolation="read_committed")


def unsecured_jws(sub):
    """An unsecured JWS (alg "none", no signature), which Kafka's default OAUTHBEARER
    validator accepts."""
    enc = lambda o: base64.urlsafe_b64encode(json.dumps(o).encode()).rstrip(b"=").decode()
    now = int(time.time())
    return enc({"alg": "none"}) + "." + enc({"sub": sub, "iat": now, "exp": now + 3600}) + "."


def security_conf(spec):
    """kafka-python's settings for a security spec."""
    conf = {"security_protocol": spec["protocol"]}
    if spec["protocol"].endswith("SSL"):
        conf["ssl_cafile"] = spec["ca"]
        if "cert" in spec:
            conf["ssl_certfile"] = spec["cert"]
            conf["ssl_keyfile"] = spec["key"]
    if spec["protocol"].startswith("SASL_"):
        conf["sasl_mechanism"] = spec["mechanism"]
        if spec["mechanism"] == "OAUTHBEARER":
            from kafka.net.sasl.oauth import AbstractTokenProvider

            class Unsecured(AbstractTokenProvider):
                def token(self):
                    return unsecured_jws(spec["user"])

            conf["sasl_oauth_token_provider"] = Unsecured()
        else:
            conf["sasl_plain_username"] = spec["user"]
            conf["sasl_plain_password"] = spec["password"]
    return conf


class _LoggedErrors(logging.Handler):
    """Keeps the errors kafka-python logs: its admin client says only "Unable to
    bootstrap" when the broker refuses it, and logs why."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.seen = []

    def emit(self, record):
        msg = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            e = record.exc_info[1]
            msg += " (%s: %s)" % (type(e).__name__, e)
        # The reason first: the broker closes the connection after its answer, and
        # kafka-python sometimes sees the close before it reads the answer.
        if msg in self.seen or len(self.seen) >= 50:
            return
        if re.search(r"(?i)authenticat|certificate", msg):
            self.seen.insert(0, msg)
        else:
            self.seen.append(msg)


def run_security(specs):
    global BOOTSTRAP, TOPIC, GROUP, SEC
    logged = _LoggedErrors()
    logging.getLogger("kafka").addHandler(logged)
    # With a handler on "kafka", Python's last-resort stderr handler no longer shows
    # kafka-python's warnings: show them for the log.
    warnings = logging.StreamHandler(sys.stderr)
    warnings.setLevel(logging.WARNING)
    logging.getLogger("kafka").addHandler(warnings)
    for raw in specs:
        spec = dict(kv.split("=", 1) for kv in raw.split(","))
        BOOTSTRAP, TOPIC, GROUP = spec["bootstrap"], spec.get("topic"), spec.get("group")
        SEC = security_conf(spec)
        if spec.get("refused") == "1":
            # kafka-python may see the broker close the connection before it reads the
            # broker's answer (SASL_AUTHENTICATION_FAILED), and then logs only the
            # close: try up to three times for the reason.
            msg = None
            for _ in range(3):
                logged.seen = []
                try:
                    admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP, request_timeout_ms=10000, bootstrap_timeout_ms=4000, **SEC)
                    try:
                        admin.list_topics()
                    finally:
                        admin.close()
                    msg = None
                    break
                except Exception as e:
                    cause = e.__cause__ or e.__context__
                    msg = "%s: %s" % (type(e).__name__, e)
                    if cause is not None:
                        msg += " (%s: %s)" % (type(cause).__name__, cause)
                    if logged.seen:
                        msg += "; logged: " + " | ".join(logged.seen[:3])
                    if re.search(r"(?i)authenticat|certificate|unknown ca", msg):
                        break
            if msg is None:
                print("RESULT %s fail the broker let the client in" % spec["name"], flush=True)
            else:
                print("RESULT %s ok refused: %s" % (spec["name"], msg.replace("\n", " ")), flush=True)
            continue
        keys = ["k-sec-%d" % i for i in range(5)]
        result(spec["name"], lambda: (produce("none", keys), consume(keys)))


if SECURITY:
    run_security(sys.argv[2:])
    sys.exit(0)

result("create-topic", create_topic)
for codec in CODECS:
    result("produce-" + codec, lambda codec=codec: produce(codec, codec_keys(codec)))
result("consume-group", consume_group)
result("resume", resume)
result("idempotent", idempotent)
result("txn", txn)
