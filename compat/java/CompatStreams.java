// Kafka Streams scenario for the compat suite (compat/cases_streams.go): a word count
// with a repartition topic and a changelog-backed store, run as two instances of one
// application with group.protocol=streams (KIP-1071), so the broker's group
// coordinator assigns the tasks.
//
//   java -cp classes:lib/* CompatStreams BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR
//
// Each step prints one line: RESULT <step> ok | RESULT <step> fail <reason>.
// Steps: produce, both-assigned, word-count. The instances are closed at the end
// unless the environment variable COMPAT_STREAMS_KEEP names a file: then they keep
// running (so the tools can describe the group) until that file appears.

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public class CompatStreams {
    static final String[] WORDS = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"};
    static final int LINES = 40;

    interface Step {
        void run() throws Exception;
    }

    static boolean result(String step, Step fn) {
        try {
            fn.run();
            System.out.println("RESULT " + step + " ok");
            System.out.flush();
            return true;
        } catch (Throwable e) {
            String msg = (e.getClass().getSimpleName() + ": " + e.getMessage()).replace('\n', ' ');
            System.out.println("RESULT " + step + " fail " + msg);
            e.printStackTrace();
            System.out.flush();
            return false;
        }
    }

    static KafkaStreams instance(String bootstrap, String appId, String input, String output, String stateDir, int n) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.split(" ")))
            .groupBy((k, w) -> w, Grouped.with("counts", Serdes.String(), Serdes.String()))
            .count(Materialized.as("counts-store"))
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir + "/instance-" + n);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.APPLICATION_SERVER_CONFIG, "instance-" + n + ":" + (8000 + n));
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        return new KafkaStreams(b.build(), p);
    }

    static int activeTasks(KafkaStreams s) {
        int n = 0;
        for (ThreadMetadata t : s.metadataForLocalThreads()) {
            n += t.activeTasks().size();
        }
        return n;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3], stateDir = args[4];
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        Map<String, Long> want = new TreeMap<>();
        boolean ok = result("produce", () -> {
            try (Admin admin = Admin.create(ap)) {
                admin.createTopics(List.of(new NewTopic(input, 3, (short) 1), new NewTopic(output, 3, (short) 1))).all().get();
            }
            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            try (KafkaProducer<String, String> prod = new KafkaProducer<>(pp)) {
                for (int i = 0; i < LINES; i++) {
                    String line = WORDS[i % WORDS.length] + " " + WORDS[(i * 3) % WORDS.length] + " " + WORDS[(i * 5 + 1) % WORDS.length];
                    for (String w : line.split(" ")) {
                        want.merge(w, 1L, Long::sum);
                    }
                    prod.send(new ProducerRecord<>(input, "line-" + i, line)).get();
                }
            }
        });
        if (!ok) {
            return;
        }
        List<KafkaStreams> instances = new ArrayList<>();
        for (int n = 1; n <= 2; n++) {
            KafkaStreams s = instance(bootstrap, appId, input, output, stateDir, n);
            instances.add(s);
            s.start();
        }
        result("both-assigned", () -> {
            long deadline = System.currentTimeMillis() + 90_000;
            while (true) {
                int a = activeTasks(instances.get(0)), b = activeTasks(instances.get(1));
                boolean running = instances.get(0).state() == KafkaStreams.State.RUNNING && instances.get(1).state() == KafkaStreams.State.RUNNING;
                if (running && a > 0 && b > 0 && a + b == 6) {
                    return;
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("instance states " + instances.get(0).state() + ", " + instances.get(1).state()
                        + "; active tasks " + a + " and " + b + " (want 6 between both)");
                }
                Thread.sleep(200);
            }
        });
        result("word-count", () -> {
            Properties cp = new Properties();
            cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            cp.put(ConsumerConfig.GROUP_ID_CONFIG, appId + "-check");
            cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName());
            Map<String, Long> got = new TreeMap<>();
            try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(cp)) {
                c.subscribe(List.of(output));
                long deadline = System.currentTimeMillis() + 90_000;
                while (!got.equals(want)) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("counts " + got + ", want " + want);
                    }
                    for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(200))) {
                        got.put(r.key(), r.value());
                    }
                }
            }
        });
        String keep = System.getenv("COMPAT_STREAMS_KEEP");
        if (keep != null && !keep.isEmpty()) {
            System.out.println("RESULT running ok");
            System.out.flush();
            long deadline = System.currentTimeMillis() + 300_000;
            while (!Files.exists(Path.of(keep)) && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
        }
        for (KafkaStreams s : instances) {
            s.close(Duration.ofSeconds(20));
        }
    }
}
