// okp births client, Java side: creates topics and produces to their partitions from the first
// moment, for the CREATE scenario of `okp verify` (src/scenarios/births.rs). The protocol is
// okp_births.py's (the librdkafka side), so both clients are driven and judged alike:
//
//   java okp.soak.OkpBirths BOOTSTRAP DEBUG_DIR
//   stdin:  round K WHEN N SPEC...  |  delete NAME...
//   stdout: hello, created, ack, err, note, end, deleted | delete-failed (see okp_births.py)
//
// Compiled by okp with the release's JDK against the release's kafka-clients jar; only client
// APIs present in every release from 2.7 to 4.x are used. DEBUG_DIR is unused: the Java
// client's own log is its stderr, which okp keeps.
package okp.soak;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.serialization.StringSerializer;

public final class OkpBirths {
    private static final String TAG = "j";
    private static final long INTERVAL_MS = 10;

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: BOOTSTRAP DEBUG_DIR");
            System.exit(2);
        }
        String bootstrap = args[0];
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        ap.put("request.timeout.ms", "30000");
        try (AdminClient admin = AdminClient.create(ap)) {
            say("hello\tjava\tkafka-clients " + org.apache.kafka.common.utils.AppInfoParser.getVersion());
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                String[] f = line.split("\t");
                if (f[0].equals("round") && f.length >= 5) {
                    round(admin, bootstrap, Integer.parseInt(f[1]), f[2], Integer.parseInt(f[3]),
                            Arrays.copyOfRange(f, 4, f.length));
                } else if (f[0].equals("delete")) {
                    try {
                        admin.deleteTopics(Arrays.asList(Arrays.copyOfRange(f, 1, f.length))).all().get(60, TimeUnit.SECONDS);
                        say("deleted\t" + (f.length - 1));
                    } catch (Exception e) {
                        say("delete-failed\t" + oneLine(e));
                    }
                } else {
                    say("note\tunknown command " + oneLine(new IllegalArgumentException(f[0])));
                }
            }
        }
        say("done");
        System.exit(0);
    }

    private static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    private static long ms(long t0) {
        return (System.nanoTime() - t0) / 1_000_000;
    }

    private static void round(AdminClient admin, String bootstrap, int k, String when, int n, String[] specs)
            throws InterruptedException {
        final long t0 = System.nanoTime();
        Map<String, List<List<Integer>>> topics = new LinkedHashMap<>();
        List<NewTopic> create = new ArrayList<>();
        for (String spec : specs) {
            String[] nv = spec.split("=", 2);
            List<List<Integer>> parts = new ArrayList<>();
            Map<Integer, List<Integer>> assignment = new HashMap<>();
            String[] ps = nv[1].split("\\|");
            for (int p = 0; p < ps.length; p++) {
                List<Integer> replicas = new ArrayList<>();
                for (String r : ps[p].split(",")) {
                    replicas.add(Integer.parseInt(r));
                }
                parts.add(replicas);
                assignment.put(p, replicas);
            }
            topics.put(nv[0], parts);
            create.add(new NewTopic(nv[0], assignment).configs(Collections.singletonMap("min.insync.replicas", "2")));
        }
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("acks", "all");
        pp.put("enable.idempotence", "true");
        pp.put("linger.ms", "5");
        pp.put("request.timeout.ms", "3000");
        pp.put("delivery.timeout.ms", "6000");
        pp.put("max.block.ms", "15000");
        pp.put("compression.type", "none");
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        AtomicLong acks = new AtomicLong();
        AtomicLong errs = new AtomicLong();
        KafkaProducer<String, String> producer = new KafkaProducer<>(pp);
        CreateTopicsResult result = admin.createTopics(create);
        if (when.equals("after")) {
            reportCreated(k, result.values(), t0);
        }
        List<String> names = new ArrayList<>(topics.keySet());
        for (int i = 0; i < n; i++) {
            for (int ti = 0; ti < names.size(); ti++) {
                String name = names.get(ti);
                for (int p = 0; p < topics.get(name).size(); p++) {
                    final String value = String.format("%s-%d-%d-%d-%06d", TAG, k, ti, p, i);
                    final int partition = p;
                    try {
                        producer.send(new ProducerRecord<>(name, p, null, value), (md, e) -> {
                            if (e == null) {
                                acks.incrementAndGet();
                                say("ack\t" + md.topic() + "\t" + md.partition() + "\t" + md.offset() + "\t" + value + "\t" + ms(t0));
                            } else {
                                errs.incrementAndGet();
                                say("err\t" + name + "\t" + partition + "\t" + value + "\t" + oneLine(e) + "\t" + ms(t0));
                            }
                        });
                    } catch (Exception e) {
                        // send() itself threw (no metadata within max.block.ms): never handed over.
                        errs.incrementAndGet();
                        say("err\t" + name + "\t" + partition + "\t" + value + "\t" + oneLine(e) + "\t" + ms(t0));
                    }
                }
            }
            Thread.sleep(INTERVAL_MS);
        }
        if (when.equals("before")) {
            reportCreated(k, result.values(), t0);
        }
        producer.flush();
        producer.close(Duration.ofSeconds(30));
        say("end\t" + k + "\t" + acks.get() + "\t" + errs.get() + "\t" + ms(t0));
    }

    private static void reportCreated(int k, Map<String, KafkaFuture<Void>> futures, long t0) {
        for (Map.Entry<String, KafkaFuture<Void>> e : futures.entrySet()) {
            try {
                e.getValue().get(60, TimeUnit.SECONDS);
                say("created\t" + k + "\t" + e.getKey() + "\t" + ms(t0) + "\tok");
            } catch (Exception x) {
                say("created\t" + k + "\t" + e.getKey() + "\t" + ms(t0) + "\terror " + oneLine(x));
            }
        }
    }

    private static String oneLine(Throwable e) {
        Throwable c = (e instanceof java.util.concurrent.ExecutionException && e.getCause() != null) ? e.getCause() : e;
        String m = c.getClass().getName() + ": " + c.getMessage();
        return m.replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
    }
}
