// okp soak client: one continuous producer or one continuous read_committed consumer for
// `okp verify --soak`, reporting every acknowledgement and every record read as one line on
// stdout, so okp can keep a history of what was sent, acknowledged and read.
//
// Compiled by okp at the start of a soak with the release's own javac-compatible JDK against the
// release's kafka-clients jar; only client APIs present in every release from 2.7 to 4.x are used.
//
//   produce BOOTSTRAP TOPIC NAME IDEMPOTENT INTERVAL_MS   sends NAME-000000, NAME-000001, … acks=all
//   consume BOOTSTRAP TOPIC NAME                          reads partition 0 from the beginning
//   read BOOTSTRAP TOPIC MAX IDLE_MS [ISOLATION [RACK]]   one read of partition 0 from its start
//                                                         (read_uncommitted unless ISOLATION says,
//                                                         client.rack RACK) up to MAX records or
//                                                         IDLE_MS without one; ends by itself
//   commit BOOTSTRAP TOPIC GROUP N                        reads partition 0's first N records and
//                                                         commits the next offset for GROUP; ends
//   committed BOOTSTRAP TOPIC GROUP                       GROUP's committed offset of partition 0
//   txn BOOTSTRAP TOPIC NAME N                            three transactions of N records each:
//                                                         NAME-c1-… committed, NAME-a-… aborted,
//                                                         NAME-c2-… committed; ends
//
// Lines written (tab-separated; values never contain tabs):
//   ack  SEQ VALUE PARTITION OFFSET MICROS   the broker acknowledged VALUE at OFFSET, MICROS after
//                                     send() was called (the producer's own latency)
//   err  SEQ VALUE ERROR              the send failed (VALUE may or may not be in the log)
//   read SESSION PARTITION OFFSET VALUE
//   note TEXT                         a producer or consumer was made anew after an error
//   committed OFFSET                  (commit, committed) the group's offset; -1: none
//   txn OUTCOME N                     (txn) a transaction of N records committed or aborted
//   done                              stdin was closed and everything in flight was answered
// Either side stops when its stdin is closed (okp closes it at the end of the soak).
package okp.soak;

import java.io.InputStream;
import java.time.Duration;
import java.util.Collections;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class OkpSoakClient {
    private static final AtomicBoolean STOP = new AtomicBoolean(false);

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: produce BOOTSTRAP TOPIC NAME IDEMPOTENT INTERVAL_MS | consume BOOTSTRAP TOPIC NAME"
                    + " | read BOOTSTRAP TOPIC MAX IDLE_MS");
            System.exit(2);
        }
        if (args[0].equals("read") && args.length >= 5 && args.length <= 7) {
            read(args[1], args[2], Long.parseLong(args[3]), Long.parseLong(args[4]),
                    args.length > 5 ? args[5] : "read_uncommitted", args.length > 6 ? args[6] : "");
            line("done");
            System.out.flush();
            System.exit(0);
        }
        if ((args[0].equals("commit") && args.length == 5) || (args[0].equals("committed") && args.length == 4)) {
            long n = args.length == 5 ? Long.parseLong(args[4]) : 0;
            commit(args[1], args[2], args[3], n, args[0].equals("commit"));
            line("done");
            System.out.flush();
            System.exit(0);
        }
        if (args[0].equals("txn") && args.length == 5) {
            transactions(args[1], args[2], args[3], Integer.parseInt(args[4]));
            line("done");
            System.out.flush();
            System.exit(0);
        }
        watchStdin();
        if (args[0].equals("produce") && args.length == 6) {
            produce(args[1], args[2], args[3], Boolean.parseBoolean(args[4]), Long.parseLong(args[5]));
        } else if (args[0].equals("consume")) {
            consume(args[1], args[2]);
        } else {
            System.err.println("unknown command " + args[0]);
            System.exit(2);
        }
        line("done");
        System.out.flush();
        System.exit(0);
    }

    /** Ends the loops when okp closes stdin. */
    private static void watchStdin() {
        Thread t = new Thread(() -> {
            try {
                InputStream in = System.in;
                while (in.read() >= 0) {
                    // okp writes nothing; anything read is ignored.
                }
            } catch (Exception e) {
                // A broken pipe means the same as end of input.
            }
            STOP.set(true);
        }, "okp-stdin");
        t.setDaemon(true);
        t.start();
    }

    private static synchronized void line(String s) {
        System.out.println(s);
    }

    private static KafkaProducer<String, String> producer(String bootstrap, boolean idempotent) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("enable.idempotence", Boolean.toString(idempotent));
        p.put("linger.ms", "5");
        p.put("request.timeout.ms", "10000");
        p.put("delivery.timeout.ms", "30000");
        p.put("max.block.ms", "20000");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    private static void produce(String bootstrap, String topic, String name, boolean idempotent, long intervalMs)
            throws InterruptedException {
        KafkaProducer<String, String> producer = producer(bootstrap, idempotent);
        long seq = 0;
        while (!STOP.get()) {
            final long s = seq++;
            final String value = String.format("%s-%06d", name, s);
            final long sentAt = System.nanoTime();
            try {
                producer.send(new ProducerRecord<>(topic, 0, null, value), (md, e) -> {
                    if (e == null) {
                        line("ack\t" + s + "\t" + value + "\t" + md.partition() + "\t" + md.offset() + "\t"
                                + (System.nanoTime() - sentAt) / 1000);
                    } else {
                        line("err\t" + s + "\t" + value + "\t" + oneLine(e));
                    }
                });
            } catch (Exception e) {
                // send() itself threw (metadata not ready within max.block.ms, or a producer in a
                // fatal state): the record was never handed over; start a new producer.
                line("err\t" + s + "\t" + value + "\t" + oneLine(e));
                line("note\tnew producer after " + oneLine(e));
                closeQuietly(producer);
                producer = producer(bootstrap, idempotent);
            }
            Thread.sleep(intervalMs);
        }
        // Every send in flight gets its answer (ack or err) before "done".
        producer.flush();
        producer.close(Duration.ofSeconds(40));
    }

    private static void closeQuietly(KafkaProducer<String, String> p) {
        try {
            p.close(Duration.ofSeconds(5));
        } catch (Exception e) {
            // Closing a broken producer may throw; the next one is independent of it.
        }
    }

    private static KafkaConsumer<String, String> consumer(String bootstrap) {
        return consumer(bootstrap, "read_committed");
    }

    private static KafkaConsumer<String, String> consumer(String bootstrap, String isolation) {
        return consumer(bootstrap, isolation, "", "");
    }

    private static KafkaConsumer<String, String> consumer(String bootstrap, String isolation, String rack,
            String group) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("isolation.level", isolation);
        if (!rack.isEmpty()) {
            p.put("client.rack", rack);
        }
        if (!group.isEmpty()) {
            p.put("group.id", group);
        }
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("request.timeout.ms", "10000");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    /**
     * Assign mode (no group, no coordinator): a session reads from where the previous one
     * stopped; a consumer made anew after an error starts a new session at the next offset.
     */
    private static void consume(String bootstrap, String topic) {
        TopicPartition tp = new TopicPartition(topic, 0);
        int session = 0;
        long next = 0;
        KafkaConsumer<String, String> consumer = consumer(bootstrap);
        consumer.assign(Collections.singletonList(tp));
        consumer.seek(tp, next);
        while (!STOP.get()) {
            try {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : records) {
                    line("read\t" + session + "\t" + r.partition() + "\t" + r.offset() + "\t" + r.value());
                    next = r.offset() + 1;
                }
            } catch (Exception e) {
                line("note\tnew consumer at offset " + next + " after " + oneLine(e));
                try {
                    consumer.close(Duration.ofSeconds(5));
                } catch (Exception ignored) {
                    // As for the producer: the next consumer does not depend on this one.
                }
                session++;
                consumer = consumer(bootstrap);
                consumer.assign(Collections.singletonList(tp));
                consumer.seek(tp, next);
            }
        }
        consumer.close(Duration.ofSeconds(5));
    }

    private static String oneLine(Throwable e) {
        String m = e.getClass().getName() + ": " + e.getMessage();
        return m.replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
    }

    /**
     * One read without a group id, so no group coordinator is ever needed: a console consumer
     * always has a group, and 3.2.0's consumer (KAFKA-13563's first fix, replaced in 3.2.1) polls
     * no records in assign mode while that group's coordinator is unknown.
     */
    private static void read(String bootstrap, String topic, long max, long idleMs, String isolation, String rack) {
        TopicPartition tp = new TopicPartition(topic, 0);
        long count = 0;
        try (KafkaConsumer<String, String> consumer = consumer(bootstrap, isolation, rack, "")) {
            consumer.assign(Collections.singletonList(tp));
            consumer.seekToBeginning(Collections.singletonList(tp));
            long last = System.currentTimeMillis();
            while (count < max && System.currentTimeMillis() - last < idleMs) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : records) {
                    line("read\t0\t" + r.partition() + "\t" + r.offset() + "\t" + r.value());
                    count++;
                    last = System.currentTimeMillis();
                }
            }
        }
        System.err.println("Processed a total of " + count + " messages");
    }

    /**
     * A consumer of GROUP in assign mode (no member, no rebalance): with `doCommit`, reads the
     * first N records of partition 0 and commits the offset after the last; either way prints the
     * group's committed offset as the group coordinator has it.
     */
    private static void commit(String bootstrap, String topic, String group, long n, boolean doCommit) {
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> consumer = consumer(bootstrap, "read_committed", "", group)) {
            consumer.assign(Collections.singletonList(tp));
            if (doCommit) {
                consumer.seekToBeginning(Collections.singletonList(tp));
                long count = 0;
                long next = -1;
                long last = System.currentTimeMillis();
                while (count < n && System.currentTimeMillis() - last < 30000) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                        if (count < n) {
                            next = r.offset() + 1;
                            count++;
                            last = System.currentTimeMillis();
                        }
                    }
                }
                if (next >= 0) {
                    consumer.commitSync(Collections.singletonMap(tp, new OffsetAndMetadata(next)));
                }
            }
            Map<TopicPartition, OffsetAndMetadata> c = consumer.committed(Collections.singleton(tp));
            OffsetAndMetadata m = c == null ? null : c.get(tp);
            line("committed\t" + (m == null ? -1 : m.offset()));
        }
    }

    /** Three transactions of N records on partition 0: committed, aborted, committed. */
    private static void transactions(String bootstrap, String topic, String name, int n) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("transactional.id", "okp-" + name);
        p.put("transaction.timeout.ms", "60000");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            String[][] plan = {{"c1", "committed"}, {"a", "aborted"}, {"c2", "committed"}};
            for (String[] t : plan) {
                producer.beginTransaction();
                for (int i = 0; i < n; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, null, String.format("%s-%s-%06d", name, t[0], i)));
                }
                producer.flush();
                if (t[1].equals("committed")) {
                    producer.commitTransaction();
                } else {
                    producer.abortTransaction();
                }
                line("txn\t" + t[1] + "\t" + n);
            }
        }
    }
}
