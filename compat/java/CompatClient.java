// Java client scenario for the compat suite (compat/clients.go compiles it with javac
// against the fetched Kafka jars and reads its output).
//
//   java -cp classes:lib/* CompatClient BOOTSTRAP TOPIC GROUP TXN_TOPIC
//   java -cp classes:lib/* CompatClient --security SPEC...
//
// The security mode runs one step per SPEC (see compat/goclients/security.go for the
// format): a short produce and group consume over a secured listener, or, with
// refused=1, a connection the broker must refuse.
//
// Each step prints one line: RESULT <step> ok | RESULT <step> fail <reason>.
// Steps: create-topic, produce-<codec> for every codec, consume-group, resume,
// idempotent, txn. A failed step does not stop the later ones.

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class CompatClient {
    static String bootstrap, topic, group, txnTopic;
    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};
    static final int PER_CODEC = 10;
    /** The security spec's client settings, added to every client's properties. */
    static Properties security = new Properties();

    interface Step {
        void run() throws Exception;
    }

    static void result(String step, Step fn) {
        try {
            fn.run();
            System.out.println("RESULT " + step + " ok");
        } catch (Throwable e) {
            Throwable root = e;
            while (root.getCause() != null && root != root.getCause()) {
                root = root.getCause();
            }
            String msg = (e.getClass().getSimpleName() + ": " + e.getMessage()
                    + (root != e ? " (" + root.getClass().getSimpleName() + ": " + root.getMessage() + ")" : ""))
                    .replace('\n', ' ');
            System.out.println("RESULT " + step + " fail " + msg);
            e.printStackTrace();
        }
        System.out.flush();
    }

    static List<String> codecKeys(String codec) {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < PER_CODEC; i++) {
            keys.add("k-" + codec + "-" + i);
        }
        return keys;
    }

    static void createTopic() throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1), new NewTopic(txnTopic, 1, (short) 1)))
                    .all().get(30, TimeUnit.SECONDS);
            Set<String> names = admin.listTopics().names().get(30, TimeUnit.SECONDS);
            if (!names.contains(topic)) {
                throw new AssertionError("created topic not listed: " + names);
            }
            int parts = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS)
                    .get(topic).partitions().size();
            if (parts != 3) {
                throw new AssertionError("described " + parts + " partitions, want 3");
            }
        }
    }

    static Properties producerProps(String codec, boolean idempotent) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, Boolean.toString(idempotent));
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.putAll(security);
        return p;
    }

    static void produce(String codec, List<String> keys, boolean idempotent) throws Exception {
        try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps(codec, idempotent))) {
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (String k : keys) {
                ProducerRecord<String, String> r = new ProducerRecord<>(topic, k, "v" + k.substring(1));
                r.headers().add("codec", codec.getBytes(StandardCharsets.UTF_8));
                r.headers().add("key", k.getBytes(StandardCharsets.UTF_8));
                fs.add(p.send(r));
            }
            for (Future<RecordMetadata> f : fs) {
                f.get(30, TimeUnit.SECONDS);
            }
        }
    }

    static String header(ConsumerRecord<String, String> r, String key) {
        Header h = r.headers().lastHeader(key);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    /** Reads until every wanted key came, then a little longer to catch extras. */
    static Map<String, ConsumerRecord<String, String>> consume(List<String> want, String groupId, String t, String isolation) {
        return consume(want, groupId, t, isolation, "classic");
    }

    static Map<String, ConsumerRecord<String, String>> consume(List<String> want, String groupId, String t, String isolation, String protocol) {
        Properties p = new Properties();
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.putAll(security);
        Map<String, ConsumerRecord<String, String>> got = new HashMap<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(t));
            long deadline = System.currentTimeMillis() + 45000;
            long doneAt = -1;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
                    if (got.put(r.key(), r) != null) {
                        throw new AssertionError("key " + r.key() + " read twice");
                    }
                }
                if (got.keySet().containsAll(want)) {
                    if (doneAt < 0) {
                        doneAt = System.currentTimeMillis();
                    } else if (System.currentTimeMillis() - doneAt > 1500) {
                        break;
                    }
                }
            }
            c.commitSync(Duration.ofSeconds(15));
        }
        Set<String> missing = new HashSet<>(want);
        missing.removeAll(got.keySet());
        Set<String> extra = new HashSet<>(got.keySet());
        extra.removeAll(want);
        if (!missing.isEmpty() || !extra.isEmpty()) {
            throw new AssertionError("missing " + missing + ", unexpected " + extra);
        }
        return got;
    }

    static void consumeGroup() {
        List<String> want = new ArrayList<>();
        for (String c : CODECS) {
            want.addAll(codecKeys(c));
        }
        for (Map.Entry<String, ConsumerRecord<String, String>> e : consume(want, group, topic, "read_uncommitted").entrySet()) {
            String k = e.getKey();
            ConsumerRecord<String, String> r = e.getValue();
            if (!r.value().equals("v" + k.substring(1))) {
                throw new AssertionError("key " + k + " has value " + r.value());
            }
            if (!k.equals(header(r, "key")) || !k.split("-")[1].equals(header(r, "codec"))) {
                throw new AssertionError("key " + k + " has headers " + r.headers());
            }
        }
    }

    static void resume() throws Exception {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            keys.add("k-resume-" + i);
        }
        produce("none", keys, false);
        consume(keys, group, topic, "read_uncommitted");
    }

    static void idempotent() throws Exception {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            keys.add("k-idem-" + i);
        }
        produce("zstd", keys, true);
    }

    /** KIP-848: the consumer group protocol, with the broker assigning partitions. */
    static void consumer848() {
        List<String> want = new ArrayList<>();
        for (String c : CODECS) {
            want.addAll(codecKeys(c));
        }
        for (int i = 0; i < 5; i++) {
            want.add("k-resume-" + i);
            want.add("k-idem-" + i);
        }
        consume(want, group + "-848", topic, "read_uncommitted", "consumer");
    }

    static void txn() throws Exception {
        Properties p = producerProps("none", true);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "compat-java-" + txnTopic);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(p)) {
            pr.initTransactions();
            pr.beginTransaction();
            for (int i = 0; i < 3; i++) {
                pr.send(new ProducerRecord<>(txnTopic, "committed-" + i, "c"));
            }
            pr.commitTransaction();
            pr.beginTransaction();
            for (int i = 0; i < 2; i++) {
                pr.send(new ProducerRecord<>(txnTopic, "aborted-" + i, "a"));
            }
            pr.flush();
            pr.abortTransaction();
        }
        consume(List.of("committed-0", "committed-1", "committed-2"), group + "-txn", txnTopic, "read_committed");
    }

    /** Kafka's client security settings for a spec (PEM files read inline). */
    static Properties securityProps(Map<String, String> spec) throws Exception {
        Properties p = new Properties();
        String protocol = spec.get("protocol");
        p.put("security.protocol", protocol);
        if (protocol.endsWith("SSL")) {
            p.put("ssl.truststore.type", "PEM");
            p.put("ssl.truststore.location", spec.get("ca"));
            if (spec.containsKey("cert")) {
                p.put("ssl.keystore.type", "PEM");
                p.put("ssl.keystore.certificate.chain", Files.readString(Path.of(spec.get("cert"))));
                p.put("ssl.keystore.key", Files.readString(Path.of(spec.get("key"))));
            }
        }
        if (protocol.startsWith("SASL_")) {
            String mech = spec.get("mechanism");
            p.put("sasl.mechanism", mech);
            String user = spec.get("user"), pass = spec.get("password");
            switch (mech) {
                case "PLAIN":
                    p.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"" + user + "\" password=\"" + pass + "\";");
                    break;
                case "OAUTHBEARER":
                    // Kafka's unsecured login: an unsecured JWS with this sub claim.
                    p.put("sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"" + user + "\";");
                    break;
                default:
                    p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + user + "\" password=\"" + pass + "\";");
            }
        }
        return p;
    }

    static void runSecurity(String[] specs) {
        for (String raw : specs) {
            Map<String, String> spec = new HashMap<>();
            for (String kv : raw.split(",")) {
                int i = kv.indexOf('=');
                spec.put(kv.substring(0, i), kv.substring(i + 1));
            }
            String name = spec.get("name");
            try {
                bootstrap = spec.get("bootstrap");
                topic = spec.get("topic");
                group = spec.get("group");
                security = securityProps(spec);
            } catch (Exception e) {
                result(name, () -> { throw e; });
                continue;
            }
            if ("1".equals(spec.get("refused"))) {
                Properties p = new Properties();
                p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
                p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
                p.putAll(security);
                try (Admin admin = Admin.create(p)) {
                    admin.listTopics().names().get(20, TimeUnit.SECONDS);
                    System.out.println("RESULT " + name + " fail the broker let the client in");
                } catch (Throwable e) {
                    Throwable root = e;
                    while (root.getCause() != null && root != root.getCause()) {
                        root = root.getCause();
                    }
                    System.out.println("RESULT " + name + " ok refused: " + (root.getClass().getSimpleName() + ": " + root.getMessage()).replace('\n', ' '));
                }
                System.out.flush();
                continue;
            }
            result(name, () -> {
                List<String> keys = new ArrayList<>();
                for (int i = 0; i < 5; i++) {
                    keys.add("k-sec-" + i);
                }
                produce("none", keys, false);
                consume(keys, group, topic, "read_uncommitted");
            });
        }
    }

    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("--security")) {
            runSecurity(java.util.Arrays.copyOfRange(args, 1, args.length));
            System.exit(0);
        }
        bootstrap = args[0];
        topic = args[1];
        group = args[2];
        txnTopic = args[3];
        result("create-topic", CompatClient::createTopic);
        for (String codec : CODECS) {
            result("produce-" + codec, () -> produce(codec, codecKeys(codec), false));
        }
        result("consume-group", CompatClient::consumeGroup);
        result("resume", CompatClient::resume);
        result("idempotent", CompatClient::idempotent);
        result("consumer-848", CompatClient::consumer848);
        result("txn", CompatClient::txn);
        System.exit(0);
    }
}
