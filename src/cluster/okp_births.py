# okp births client, librdkafka side: creates topics and produces to their partitions from the
# first moment, for the CREATE scenario of `okp verify` (src/scenarios/births.rs). The same
# protocol as OkpBirths.java, so both clients are driven and judged alike.
#
# Run by okp with the Python that has confluent-kafka (scripts/setup.sh installs it):
#   python3 okp_births.py BOOTSTRAP DEBUG_DIR [TAG [KEY=VALUE...]]
# TAG (default r) starts every value; KEY=VALUE are producer settings over the ones below.
# Reads one command per stdin line (tab-separated), answers on stdout, one line each:
#   round K WHEN N SPEC...   create the topics SPEC (NAME=R,R,R|R,R,R: one replica list per
#                            partition) in one CreateTopics call, with min.insync.replicas=2;
#                            WHEN "after": produce once CreateTopics has returned, "before": right
#                            after sending it; N records to every partition, a new idempotent
#                            acks=all producer for the round, librdkafka's debug log
#                            (msg,eos,topic,protocol) in DEBUG_DIR/round-K.log
#   delete NAME...           delete these topics
# Lines written:
#   hello CLIENT VERSION...
#   created K NAME MS ok|error TEXT     CreateTopics' answer for NAME, MS after the round began
#   ack NAME PARTITION OFFSET VALUE MS  a delivery report without error: VALUE acked at OFFSET
#                                       (-1: the report carried no offset)
#   err NAME PARTITION VALUE ERROR MS   a delivery report with an error
#   note TEXT                           an error the client reported outside a delivery report
#   end K ACKS ERRS MS                  every record of the round has its delivery report
#   deleted N | delete-failed TEXT
#   done                                stdin was closed; the client ends
# Values are TAG-K-T-P-SEQ: the client's tag, the round, the topic's index in the round, the
# partition and the record's index in that partition (its producer sequence when nothing
# failed). Values never contain a tab.
import logging
import sys
import time
import traceback

import confluent_kafka
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

INTERVAL_S = 0.01


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def one_line(text):
    return str(text).replace("\t", " ").replace("\n", " ").replace("\r", " ")


def ms(t0):
    return int((time.monotonic() - t0) * 1000)


def parse_spec(spec):
    name, parts = spec.split("=", 1)
    return name, [[int(r) for r in p.split(",")] for p in parts.split("|")]


def round_logger(debug_dir, k):
    log = logging.getLogger("okp-round-%d" % k)
    log.setLevel(logging.DEBUG)
    log.propagate = False
    handler = logging.FileHandler("%s/round-%d.log" % (debug_dir, k), mode="w")
    handler.setFormatter(logging.Formatter("%(created).3f %(message)s"))
    log.addHandler(handler)
    return log, handler


def do_round(admin, bootstrap, debug_dir, extra, k, when, n, specs):
    t0 = time.monotonic()
    topics = [parse_spec(s) for s in specs]
    log, handler = round_logger(debug_dir, k)
    counts = {"ack": 0, "err": 0}

    def on_delivery(err, msg):
        try:
            report(err, msg)
        except Exception:  # noqa: BLE001 - an exception must not leave librdkafka's callback
            traceback.print_exc()
            say("note\tdelivery report not read: %s" % one_line(sys.exc_info()[1]))

    def report(err, msg):
        value = msg.value().decode("ascii", "replace")
        if err is None:
            counts["ack"] += 1
            # librdkafka reports some successes without an offset (-1, None here): kept as -1.
            offset = msg.offset()
            say("ack\t%s\t%d\t%d\t%s\t%d" % (msg.topic(), msg.partition(), -1 if offset is None else offset, value, ms(t0)))
        else:
            counts["err"] += 1
            say("err\t%s\t%d\t%s\t%s\t%d" % (msg.topic(), msg.partition(), value, one_line("%s %s" % (err.name(), err.str())), ms(t0)))

    conf = {
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "message.timeout.ms": 6000,
        "compression.type": "none",
        # The scenario creates every topic itself: a Metadata request must never create one.
        "allow.auto.create.topics": False,
        "debug": "msg,eos,topic,protocol",
        "logger": log,
        "error_cb": lambda e: say("note\t%s" % one_line(e)),
    }
    conf.update(extra)
    producer = Producer(conf)
    new = [NewTopic(name, num_partitions=len(parts), replica_assignment=parts, config={"min.insync.replicas": "2"})
           for name, parts in topics]
    futures = admin.create_topics(new, operation_timeout=30, request_timeout=30)

    def report_created():
        for name, f in futures.items():
            try:
                f.result()
                say("created\t%d\t%s\t%d\tok" % (k, name, ms(t0)))
            except Exception as e:  # noqa: BLE001 - every failure is reported, none is fatal
                say("created\t%d\t%s\t%d\terror %s" % (k, name, ms(t0), one_line(e)))

    if when == "after":
        report_created()
    for i in range(n):
        for ti, (name, parts) in enumerate(topics):
            for p in range(len(parts)):
                producer.produce(name, value="%s-%d-%d-%d-%06d" % (TAG, k, ti, p, i), partition=p, on_delivery=on_delivery)
        producer.poll(0)
        time.sleep(INTERVAL_S)
    if when == "before":
        report_created()
    left = producer.flush(60)
    if left:
        say("note\t%d records still without a delivery report after 60 s" % left)
    say("end\t%d\t%d\t%d\t%d" % (k, counts["ack"], counts["err"], ms(t0)))
    del producer
    log.removeHandler(handler)
    handler.close()


def main():
    global TAG
    bootstrap, debug_dir = sys.argv[1], sys.argv[2]
    if len(sys.argv) > 3:
        TAG = sys.argv[3]
    extra = dict(kv.split("=", 1) for kv in sys.argv[4:])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    say("hello\tlibrdkafka\tconfluent-kafka %s\tlibrdkafka %s%s" % (
        confluent_kafka.version(), confluent_kafka.libversion()[0], "".join("\t" + kv for kv in sys.argv[4:])))
    for line in sys.stdin:
        f = line.rstrip("\n").split("\t")
        if f[0] == "round":
            do_round(admin, bootstrap, debug_dir, extra, int(f[1]), f[2], int(f[3]), f[4:])
        elif f[0] == "delete":
            try:
                for fut in admin.delete_topics(f[1:], operation_timeout=30, request_timeout=30).values():
                    fut.result()
                say("deleted\t%d" % (len(f) - 1))
            except Exception as e:  # noqa: BLE001
                say("delete-failed\t%s" % one_line(e))
        else:
            say("note\tunknown command %s" % one_line(f[0]))
    say("done")


TAG = "r"

if __name__ == "__main__":
    main()
