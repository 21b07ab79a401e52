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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * gokafkad dev driven from JUnit 5 through its HTTP control API, with Kafka's Java client
 * watching the effect (compat/cases_dev.go runs it; written from the README's "In any
 * language: gokafkad dev" section). The class starts one {@code gokafkad dev --brokers 3}
 * (the binary named by $GOKAFKAD) on free ports and stops it with SIGTERM at the end; every
 * test leaves the cluster healthy for the next.
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

  @BeforeAll
  static void startDev() throws Exception {
    String bin = System.getenv().getOrDefault("GOKAFKAD", "gokafkad");
    int port = freePortRun(3);
    String http = "127.0.0.1:" + freePort();
    dev = new ProcessBuilder(bin, "dev", "--brokers", "3", "--port", Integer.toString(port), "--http", http,
            "--override", "replica.lag.time.max.ms=1000")
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(dev.getInputStream(), StandardCharsets.UTF_8));
    Map<String, String> lines = new HashMap<>();
    Pattern p = Pattern.compile("(bootstrap servers|control API|data): (\\S+)");
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

  @AfterAll
  static void stopDev() throws Exception {
    if (dev == null) return;
    dev.destroy(); // SIGTERM
    assertTrue(dev.waitFor(60, TimeUnit.SECONDS), "gokafkad dev did not stop on SIGTERM");
    assertEquals(0, dev.exitValue());
    assertFalse(new File(dataDir).exists(), "data left behind in " + dataDir);
  }

  /** Sends method path with body (null: none), checks the status, returns the JSON. */
  static JsonNode call(String method, String path, String body, int want) {
    try {
      HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(api + path)).timeout(Duration.ofMinutes(2));
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
      long start = System.nanoTime();
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
}
