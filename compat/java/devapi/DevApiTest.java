import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * gokafkad dev driven from JUnit 5 through its HTTP control API, with Kafka's Java client
 * watching the effect (compat/cases_dev.go runs it; written from the README's "In any
 * language: gokafkad dev" section). The class starts one {@code gokafkad dev --brokers 3}
 * (the binary named by $GOKAFKAD) on free ports and stops it with SIGTERM at the end; every
 * test leaves the cluster healthy for the next, and {@link #healthyCluster} makes it so when
 * one did not (a failed test stops half-way: a broker paused, a link cut, a fault active).
 */
class DevApiTest {
  static final String TOPIC = "orders";
  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient HTTP = HttpClient.newHttpClient();
  static Process dev;
  static String bootstrap, api, dataDir;

  static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** The first of n consecutive loopback ports that are free now. */
  static int freePortRun(int n) throws Exception {
    for (int attempt = 0; attempt < 50; attempt++) {
      int first = freePort();
      boolean free = true;
      for (int i = 1; i < n && free; i++) {
        try (ServerSocket s = new ServerSocket(first + i)) {
        } catch (Exception e) {
          free = false;
        }
      }
      if (free) return first;
    }
    throw new IllegalStateException("no " + n + " consecutive free ports");
  }

  /**
   * Starts gokafkad dev with brokers brokers and flags on free ports, adds its process to
   * started and returns what it printed (bootstrap servers, CA, control API,
   * data); the rest of its output is drained.
   */
  static Map<String, String> startDev(List<Process> started, int brokers, String... flags) throws Exception {
    String bin = System.getenv().getOrDefault("GOKAFKAD", "gokafkad");
    int port = freePortRun(brokers);
    String http = "127.0.0.1:" + freePort();
    List<String> cmd = new ArrayList<>(List.of(bin, "dev", "--brokers", Integer.toString(brokers),
        "--port", Integer.toString(port), "--http", http));
    cmd.addAll(List.of(flags));
    Process proc = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    started.add(proc);
    BufferedReader out = new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8));
    Map<String, String> lines = new HashMap<>();
    Pattern p = Pattern.compile("(bootstrap servers|CA|control API|data): (\\S+)");
    for (String line; !lines.containsKey("data") && (line = out.readLine()) != null; ) {
      Matcher m = p.matcher(line);
      if (m.lookingAt()) lines.put(m.group(1), m.group(2));
    }
    assertTrue(lines.containsKey("control API"), "gokafkad dev printed " + lines);
    Thread drain = new Thread(() -> { // the rest of its output, to the end
      try {
        while (out.readLine() != null) {}
      } catch (Exception e) {
        // the process is gone
      }
    });
    drain.setDaemon(true);
    drain.start();
    return lines;
  }

  /** Stops a gokafkad dev with SIGTERM and checks it removed its data. */
  static void stopDev(Process proc, String data) throws Exception {
    proc.destroy(); // SIGTERM
    assertTrue(proc.waitFor(60, TimeUnit.SECONDS), "gokafkad dev did not stop on SIGTERM");
    assertEquals(0, proc.exitValue());
    assertFalse(new File(data).exists(), "data left behind in " + data);
  }

  @BeforeAll
  static void startDev() throws Exception {
    List<Process> started = new ArrayList<>();
    Map<String, String> lines = startDev(started, 3, "--override", "replica.lag.time.max.ms=1000");
    dev = started.get(0);
    bootstrap = lines.get("bootstrap servers");
    api = lines.get("control API").replaceFirst("/v1/.*$", "");
    dataDir = lines.get("data");
    Properties ap = new Properties();
    ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (Admin admin = Admin.create(ap)) {
      admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 3))).all().get(30, TimeUnit.SECONDS);
    }
    waitFor("a leader and a full ISR", () -> partition().get("leader").asInt() >= 0 && partition().get("isr").size() == 3);
  }

  /**
   * Before each test: every broker running and resumed, every link healed, every fault
   * deleted, and the partition's ISR full again, so one test's failure is its own row
   * and not the next tests' as well.
   */
  @BeforeEach
  void healthyCluster() {
    for (JsonNode n : call("GET", "/v1/cluster", null, 200).get("nodes")) {
      int id = n.get("id").asInt();
      if (!n.get("running").asBoolean()) {
        call("POST", "/v1/brokers/" + id + "/restart", null, 200);
      } else if (n.get("paused").asBoolean()) {
        call("POST", "/v1/brokers/" + id + "/resume", null, 200);
      }
    }
    if (call("GET", "/v1/links", null, 200).get("links").size() > 0) call("POST", "/v1/links/heal", null, 200);
    call("DELETE", "/v1/faults", null, 200);
    waitFullISR();
  }

  @AfterAll
  static void stopDev() throws Exception {
    if (dev == null) return;
    stopDev(dev, dataDir);
  }

  /** Sends method path with body (null: none), checks the status, returns the JSON. */
  static JsonNode call(String method, String path, String body, int want) {
    return call(api, method, path, body, want);
  }

  /** call to the control API at base. */
  static JsonNode call(String base, String method, String path, String body, int want) {
    try {
      HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofMinutes(2));
      b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
      HttpResponse<String> resp = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(want, resp.statusCode(), method + " " + path + ": " + resp.body());
      return JSON.readTree(resp.body());
    } catch (Exception e) {
      throw new RuntimeException(method + " " + path, e);
    }
  }

  static JsonNode partition() {
    return call("GET", "/v1/partitions/" + TOPIC + "/0", null, 200);
  }

  static JsonNode node(int id) {
    for (JsonNode n : call("GET", "/v1/cluster", null, 200).get("nodes")) {
      if (n.get("id").asInt() == id) return n;
    }
    throw new AssertionError("no node " + id);
  }

  static void waitFor(String what, BooleanSupplier cond) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > deadline) throw new AssertionError("timed out after 60 s waiting for " + what);
      Thread.sleep(50);
    }
  }

  static KafkaProducer<String, String> producer(int retries) {
    Properties pp = new Properties();
    pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    pp.put(ProducerConfig.ACKS_CONFIG, "all");
    pp.put(ProducerConfig.RETRIES_CONFIG, Integer.toString(retries));
    pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, retries > 0 ? "true" : "false");
    pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
    pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "90000");
    pp.put(ProducerConfig.METADATA_MAX_AGE_CONFIG, "1000");
    pp.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "200");
    pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    return new KafkaProducer<>(pp);
  }

  /**
   * Pause a follower: the acks=all produce waits until the leader drops it from the ISR
   * (replica.lag.time.max.ms=1000), then succeeds; resumed, the follower rejoins the ISR.
   * (Pausing the leader works too, but Kafka's Java client then keeps reconnecting to the
   * paused broker for its metadata, as it would to a SIGSTOPped Kafka broker, for up to
   * a minute.)
   */
  @Test
  void pauseFollower() throws Exception {
    try (KafkaProducer<String, String> p = producer(20)) {
      p.send(new ProducerRecord<>(TOPIC, "before")).get(60, TimeUnit.SECONDS);
      // The follower's fetch that let "before" be acknowledged had it caught up then;
      // the leader drops it replica.lag.time.max.ms (1 s) after its last caught-up
      // fetch, so the acks=all write below waits until at least then: timed from
      // here, not from the pause, which comes after some of that second has passed.
      long start = System.nanoTime();
      JsonNode part = partition();
      int leader = part.get("leader").asInt();
      int follower = -1;
      for (JsonNode r : part.get("replicas")) {
        if (r.asInt() != leader) {
          follower = r.asInt();
          break;
        }
      }
      final int paused = follower;
      JsonNode n = call("POST", "/v1/brokers/" + paused + "/pause", null, 200);
      assertTrue(n.get("paused").asBoolean() && n.get("running").asBoolean(), n.toString());
      call("POST", "/v1/brokers/" + paused + "/pause", null, 409);
      p.send(new ProducerRecord<>(TOPIC, "during")).get(120, TimeUnit.SECONDS);
      assertTrue(System.nanoTime() - start > TimeUnit.MILLISECONDS.toNanos(500),
          "an acks=all produce answered before the paused follower left the ISR");
      JsonNode now = partition();
      assertEquals(leader, now.get("leader").asInt(), now.toString());
      for (JsonNode r : now.get("isr")) assertNotEquals(paused, r.asInt(), now.toString());
      call("POST", "/v1/brokers/" + paused + "/resume", null, 200);
      JsonNode back = call("POST", "/v1/partitions/" + TOPIC + "/0/wait", "{\"isr\": [0, 1, 2]}", 200);
      assertEquals(3, back.get("isr").size(), back.toString());
    }
  }

  /**
   * A Produce fault: a producer that does not retry sees NOT_ENOUGH_REPLICAS, the fault
   * counts it, and once deleted the produce succeeds.
   */
  @Test
  void produceFault() throws Exception {
    JsonNode fault = call("POST", "/v1/faults",
        "{\"api_key\": \"Produce\", \"error\": \"NOT_ENOUGH_REPLICAS\", \"topic\": \"" + TOPIC + "\"}", 201);
    int id = fault.get("id").asInt();
    try (KafkaProducer<String, String> p = producer(0)) {
      ExecutionException e = assertThrows(ExecutionException.class,
          () -> p.send(new ProducerRecord<>(TOPIC, "refused")).get(60, TimeUnit.SECONDS));
      assertInstanceOf(NotEnoughReplicasException.class, e.getCause());
      JsonNode got = call("GET", "/v1/faults/" + id, null, 200);
      assertTrue(got.get("fired").asInt() >= 1 && got.get("active").asBoolean(), got.toString());
      call("DELETE", "/v1/faults/" + id, null, 200);
      p.send(new ProducerRecord<>(TOPIC, "accepted")).get(60, TimeUnit.SECONDS);
    }
    call("GET", "/v1/faults/" + id, null, 404);
  }

  /**
   * Kill a follower, write without it, restart it: it comes back on its port and catches
   * up, every replica with the same log end.
   */
  @Test
  void killRestartFollower() throws Exception {
    JsonNode part = partition();
    int leader = part.get("leader").asInt();
    int follower = -1;
    for (JsonNode r : part.get("replicas")) {
      if (r.asInt() != leader) {
        follower = r.asInt();
        break;
      }
    }
    String address = node(follower).get("address").asText();
    assertFalse(call("POST", "/v1/brokers/" + follower + "/kill", null, 200).get("running").asBoolean());
    try (KafkaProducer<String, String> p = producer(20)) {
      p.send(new ProducerRecord<>(TOPIC, "without the follower")).get(60, TimeUnit.SECONDS);
    }
    JsonNode n = call("POST", "/v1/brokers/" + follower + "/restart", null, 200);
    assertTrue(n.get("running").asBoolean(), n.toString());
    assertEquals(address, n.get("address").asText());
    waitFor("every replica caught up and in the ISR", () -> {
      JsonNode q = partition();
      if (q.get("isr").size() != 3) return false;
      long leo = -2;
      for (JsonNode r : q.get("replica_states")) {
        if (!r.get("running").asBoolean()) return false;
        if (leo != -2 && r.get("log_end_offset").asLong() != leo) return false;
        leo = r.get("log_end_offset").asLong();
      }
      return true;
    });
  }

  static int followerOf(JsonNode part) {
    int leader = part.get("leader").asInt();
    for (JsonNode r : part.get("replicas")) {
      if (r.asInt() != leader) return r.asInt();
    }
    throw new AssertionError("no follower in " + part);
  }

  static boolean contains(JsonNode ids, int id) {
    for (JsonNode r : ids) {
      if (r.asInt() == id) return true;
    }
    return false;
  }

  static void waitFullISR() {
    JsonNode back = call("POST", "/v1/partitions/" + TOPIC + "/0/wait", "{\"isr\": [0, 1, 2]}", 200);
    assertEquals(3, back.get("isr").size(), back.toString());
  }

  /** The leader the producer's metadata names for partition 0 (-1: none). */
  static int producerLeader(KafkaProducer<String, String> p) {
    for (PartitionInfo pi : p.partitionsFor(TOPIC)) {
      if (pi.partition() == 0 && pi.leader() != null) return pi.leader().id();
    }
    return -1;
  }

  static String get(String url) throws Exception {
    HttpResponse<String> resp = HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(200, resp.statusCode(), url + ": " + resp.body());
    return resp.body();
  }

  /**
   * Isolate a follower (cut from every node and client): the acks=all produce waits until
   * the leader drops it from the ISR, the links show the cut; healed, it rejoins.
   */
  @Test
  void isolateFollower() throws Exception {
    try (KafkaProducer<String, String> p = producer(20)) {
      p.send(new ProducerRecord<>(TOPIC, "before")).get(60, TimeUnit.SECONDS);
      long start = System.nanoTime(); // as in pauseFollower: the follower was caught up then
      JsonNode part = partition();
      int leader = part.get("leader").asInt(), follower = followerOf(part);
      call("POST", "/v1/brokers/" + follower + "/isolate", null, 200);
      boolean cut = false;
      for (JsonNode l : call("GET", "/v1/links", null, 200).get("links")) {
        cut |= l.get("cut").asBoolean() && (l.get("from").asInt() == follower || l.get("to").asInt() == follower);
      }
      assertTrue(cut, "no cut link of " + follower);
      p.send(new ProducerRecord<>(TOPIC, "during")).get(120, TimeUnit.SECONDS);
      assertTrue(System.nanoTime() - start > TimeUnit.MILLISECONDS.toNanos(500),
          "an acks=all produce answered before the isolated follower left the ISR");
      JsonNode now = partition();
      assertEquals(leader, now.get("leader").asInt(), now.toString());
      assertFalse(contains(now.get("isr"), follower), now.toString());
      call("POST", "/v1/brokers/" + follower + "/heal", null, 200);
      assertEquals(0, call("GET", "/v1/links", null, 200).get("links").size());
      waitFullISR();
    }
  }

  /**
   * An error injected with POST /v1/faults reaches the Java producer's send callback as
   * that error's exception and code (INVALID_RECORD, 87); the fault fires once.
   */
  @Test
  void produceErrorInCallback() throws Exception {
    JsonNode fault = call("POST", "/v1/faults",
        "{\"api_key\": \"Produce\", \"error\": \"INVALID_RECORD\", \"topic\": \"" + TOPIC + "\", \"times\": 1}", 201);
    try (KafkaProducer<String, String> p = producer(0)) {
      CompletableFuture<Exception> seen = new CompletableFuture<>();
      p.send(new ProducerRecord<>(TOPIC, "refused"), (md, e) -> seen.complete(e));
      Exception e = seen.get(60, TimeUnit.SECONDS);
      assertInstanceOf(InvalidRecordException.class, e);
      assertEquals(87, Errors.forException(e).code());
      JsonNode got = call("GET", "/v1/faults/" + fault.get("id").asInt(), null, 200);
      assertEquals(1, got.get("fired").asInt(), got.toString());
      assertFalse(got.get("active").asBoolean(), got.toString());
      p.send(new ProducerRecord<>(TOPIC, "accepted")).get(60, TimeUnit.SECONDS);
    }
    call("DELETE", "/v1/faults", null, 200);
  }

  /**
   * A Produce delay fault holds the producer's request 1.5 s; a drop fault closes its
   * connection, which the producer retries (its record-retry-total counts it); each fires
   * once.
   */
  @Test
  void delayAndDropFaults() throws Exception {
    try (KafkaProducer<String, String> p = producer(20)) {
      p.send(new ProducerRecord<>(TOPIC, "warm-up")).get(60, TimeUnit.SECONDS);
      JsonNode delay = call("POST", "/v1/faults", "{\"api_key\": \"Produce\", \"delay_ms\": 1500, \"topic\": \"" + TOPIC
          + "\", \"from_clients\": true, \"times\": 1}", 201);
      long start = System.nanoTime();
      p.send(new ProducerRecord<>(TOPIC, "delayed")).get(60, TimeUnit.SECONDS);
      assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(1500), "the delayed produce answered early");
      assertEquals(1, call("GET", "/v1/faults/" + delay.get("id").asInt(), null, 200).get("fired").asInt());
      JsonNode drop = call("POST", "/v1/faults", "{\"api_key\": \"Produce\", \"drop\": true, \"topic\": \"" + TOPIC
          + "\", \"from_clients\": true, \"times\": 1}", 201);
      p.send(new ProducerRecord<>(TOPIC, "dropped, then retried")).get(60, TimeUnit.SECONDS);
      assertEquals(1, call("GET", "/v1/faults/" + drop.get("id").asInt(), null, 200).get("fired").asInt());
      double retries = -1;
      for (Map.Entry<MetricName, ? extends Metric> m : p.metrics().entrySet()) {
        if (m.getKey().name().equals("record-retry-total") && m.getKey().group().equals("producer-metrics")) {
          retries = ((Number) m.getValue().metricValue()).doubleValue();
        }
      }
      assertTrue(retries >= 1, "record-retry-total " + retries + " after a dropped connection");
    }
    call("DELETE", "/v1/faults", null, 200);
  }

  /**
   * A delay on the link between the clients and the leader holds the producer's request
   * and its answer 800 ms each; /v1/links shows it until healed.
   */
  @Test
  void linkDelay() throws Exception {
    try (KafkaProducer<String, String> p = producer(20)) {
      p.send(new ProducerRecord<>(TOPIC, "before")).get(60, TimeUnit.SECONDS);
      int leader = partition().get("leader").asInt();
      call("POST", "/v1/links/delay", "{\"from\": \"clients\", \"to\": " + leader + ", \"delay_ms\": 800}", 200);
      JsonNode links = call("GET", "/v1/links", null, 200).get("links");
      assertTrue(links.size() >= 1 && links.get(0).get("delay_ms").asInt() == 800, links.toString());
      long start = System.nanoTime();
      p.send(new ProducerRecord<>(TOPIC, "delayed")).get(60, TimeUnit.SECONDS);
      assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(1600), "the delayed produce answered early");
      call("POST", "/v1/links/heal", null, 200);
      assertEquals(0, call("GET", "/v1/links", null, 200).get("links").size());
      p.send(new ProducerRecord<>(TOPIC, "healed")).get(60, TimeUnit.SECONDS);
    }
  }

  /**
   * Move the leadership to a follower (the producer's metadata follows), shut that broker
   * down (controlled: its leadership moves at once), restart it and elect the preferred
   * leaders: it leads again and the producer writes to it.
   */
  @Test
  void moveLeaderShutdownElectPreferred() throws Exception {
    try (KafkaProducer<String, String> p = producer(20)) {
      p.send(new ProducerRecord<>(TOPIC, "before")).get(60, TimeUnit.SECONDS);
      int target = followerOf(partition());
      assertEquals(target, call("POST", "/v1/partitions/" + TOPIC + "/0/move-leader", "{\"to\": " + target + "}", 200)
          .get("leader").asInt());
      p.send(new ProducerRecord<>(TOPIC, "after the move")).get(60, TimeUnit.SECONDS);
      waitFor("the producer's metadata naming " + target, () -> producerLeader(p) == target);
      assertFalse(call("POST", "/v1/brokers/" + target + "/shutdown", null, 200).get("running").asBoolean());
      int other = partition().get("leader").asInt();
      assertTrue(other >= 0 && other != target, partition().toString());
      p.send(new ProducerRecord<>(TOPIC, "while it is down")).get(60, TimeUnit.SECONDS);
      call("POST", "/v1/brokers/" + target + "/restart", null, 200);
      waitFullISR();
      JsonNode elected = call("POST", "/v1/leaders/elect-preferred", "{\"topics\": [\"" + TOPIC + "\"]}", 200);
      boolean moved = false;
      for (JsonNode m : elected.get("moves")) moved |= m.get("to").asInt() == target;
      assertTrue(moved, elected.toString());
      p.send(new ProducerRecord<>(TOPIC, "after the election")).get(60, TimeUnit.SECONDS);
      waitFor("the producer's metadata naming " + target + " again", () -> producerLeader(p) == target);
    }
  }

  /**
   * Shrink the ISR by a follower whose replica fetches a fault fails: the acks=all write
   * is acknowledged without it and does not reach it; with the fault deleted it rejoins.
   */
  @Test
  void shrinkIsr() throws Exception {
    JsonNode part = partition();
    int leader = part.get("leader").asInt(), follower = followerOf(part);
    int id = call("POST", "/v1/faults", "{\"api_key\": \"Fetch\", \"error\": \"UNKNOWN_SERVER_ERROR\", \"brokers\": [" + leader
        + "], \"from_nodes\": [" + follower + "]}", 201).get("id").asInt();
    // A fetch the leader already holds (long polling) would bring the follower the write.
    waitFor("the follower's fetches failed", () -> call("GET", "/v1/faults/" + id, null, 200).get("fired").asInt() >= 1);
    try (KafkaProducer<String, String> p = producer(20)) {
      JsonNode shrunk = call("POST", "/v1/partitions/" + TOPIC + "/0/shrink-isr", "{\"replica\": " + follower + "}", 200);
      assertFalse(contains(shrunk.get("isr"), follower), shrunk.toString());
      RecordMetadata md = p.send(new ProducerRecord<>(TOPIC, "without the follower")).get(60, TimeUnit.SECONDS);
      for (JsonNode r : partition().get("replica_states")) {
        if (r.get("broker").asInt() == follower) {
          assertTrue(r.get("log_end_offset").asLong() <= md.offset(), r.toString());
        }
      }
      call("DELETE", "/v1/faults/" + id, null, 200);
      waitFullISR();
    }
  }

  /**
   * A consumer group's member in /v1/groups/{id}, and a transactional producer's open
   * transaction in /v1/transactions until it commits.
   */
  @Test
  void groupsAndTransactions() throws Exception {
    Properties cp = new Properties();
    cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    cp.put(ConsumerConfig.GROUP_ID_CONFIG, "junit-group");
    cp.put(ConsumerConfig.CLIENT_ID_CONFIG, "junit-consumer");
    cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
      c.subscribe(List.of(TOPIC));
      waitFor("an assignment", () -> {
        c.poll(Duration.ofMillis(200));
        return !c.assignment().isEmpty();
      });
      waitFor("the group stable with its member", () -> {
        JsonNode g = call("GET", "/v1/groups/junit-group", null, 200);
        return g.get("state").asText().equals("Stable") && g.get("members").size() == 1
            && g.get("members").get(0).get("client_id").asText().equals("junit-consumer");
      });
    }
    Properties tp = new Properties();
    tp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    tp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "junit-txn");
    tp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    tp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    try (KafkaProducer<String, String> p = new KafkaProducer<>(tp)) {
      p.initTransactions();
      p.beginTransaction();
      p.send(new ProducerRecord<>(TOPIC, "in a transaction")).get(60, TimeUnit.SECONDS);
      waitFor("the open transaction listed", () -> {
        for (JsonNode t : call("GET", "/v1/transactions", null, 200).get("transactions")) {
          if (t.get("transactional_id").asText().equals("junit-txn") && t.get("state").asText().equals("Ongoing")) return true;
        }
        return false;
      });
      p.commitTransaction();
      waitFor("the committed transaction gone", () -> {
        for (JsonNode t : call("GET", "/v1/transactions", null, 200).get("transactions")) {
          if (t.get("transactional_id").asText().equals("junit-txn")) return false;
        }
        return true;
      });
    }
  }

  /**
   * Isolate a follower: the leader's status page, its JSON and its metrics show the
   * partition under-replicated without it; healed, whole again.
   */
  @Test
  void statusPage() throws Exception {
    JsonNode part = partition();
    int leader = part.get("leader").asInt(), follower = followerOf(part);
    assertTrue(get(api + "/nodes/" + leader + "/").toLowerCase().contains("<html"));
    try (KafkaProducer<String, String> p = producer(20)) {
      p.send(new ProducerRecord<>(TOPIC, "before")).get(60, TimeUnit.SECONDS);
      call("POST", "/v1/brokers/" + follower + "/isolate", null, 200);
      p.send(new ProducerRecord<>(TOPIC, "while isolated")).get(120, TimeUnit.SECONDS);
    }
    BooleanSupplier shown = () -> {
      for (JsonNode x : call("GET", "/nodes/" + leader + "/v1/status", null, 200).get("partitions")) {
        if (x.get("topic").asText().equals(TOPIC) && x.get("partition").asInt() == 0) {
          return x.get("role").asText().equals("leader") && !contains(x.get("isr"), follower) && x.get("under_replicated").asBoolean();
        }
      }
      return false;
    };
    waitFor("the leader's status showing the shrunk ISR", shown);
    assertTrue(get(api + "/nodes/" + leader + "/metrics").contains("kafka_server_replicamanager_underreplicatedpartitions 1"));
    call("POST", "/v1/brokers/" + follower + "/heal", null, 200);
    waitFullISR();
    waitFor("the status page whole again", () -> !shown.getAsBoolean());
  }

  /**
   * A second gokafkad dev with --tls and SASL users: Kafka's Java client logs in over
   * SASL_SSL with SCRAM-SHA-256, trusting the printed CA file (also in /v1/cluster); a
   * wrong password fails with SaslAuthenticationException; after a kill and a restart of
   * the broker the producer reconnects with TLS and SASL.
   */
  @Test
  void securedDev() throws Exception {
    List<Process> started = new ArrayList<>();
    Map<String, String> lines = startDev(started, 1, "--tls", "--sasl-users", "alice:alice-secret", "--sasl-mechanism",
        "SCRAM-SHA-256");
    try {
      String base = lines.get("control API").replaceFirst("/v1/.*$", "");
      JsonNode cl = call(base, "GET", "/v1/cluster", null, 200);
      assertEquals("SASL_SSL", cl.get("security_protocol").asText(), cl.toString());
      assertEquals("SCRAM-SHA-256", cl.get("sasl_mechanisms").get(0).asText(), cl.toString());
      assertEquals(lines.get("CA"), cl.get("ca_file").asText(), cl.toString());
      Function<String, Properties> secured = pass -> {
        Properties sp = new Properties();
        sp.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, lines.get("bootstrap servers"));
        sp.put("security.protocol", "SASL_SSL");
        sp.put("ssl.truststore.type", "PEM");
        sp.put("ssl.truststore.location", lines.get("CA"));
        sp.put("sasl.mechanism", "SCRAM-SHA-256");
        sp.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\""
            + pass + "\";");
        return sp;
      };
      try (Admin admin = Admin.create(secured.apply("alice-secret"))) {
        admin.createTopics(List.of(new NewTopic("secured", 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
      }
      try (Admin wrong = Admin.create(secured.apply("wrong"))) {
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> wrong.describeCluster().clusterId().get(30, TimeUnit.SECONDS));
        assertInstanceOf(SaslAuthenticationException.class, e.getCause());
      }
      Properties pp = secured.apply("alice-secret");
      pp.put(ProducerConfig.ACKS_CONFIG, "all");
      pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
      pp.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
      pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
      pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
      try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
        p.send(new ProducerRecord<>("secured", "first")).get(60, TimeUnit.SECONDS);
        call(base, "POST", "/v1/brokers/0/kill", null, 200);
        call(base, "POST", "/v1/brokers/0/restart", null, 200);
        p.send(new ProducerRecord<>("secured", "after the restart")).get(60, TimeUnit.SECONDS);
      }
    } finally {
      stopDev(started.get(0), lines.get("data"));
    }
  }
}
