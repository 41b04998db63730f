// A Kafka Streams word count (tests/e2e/test_streams_groups.py): lines of `input` are split into
// words, re-keyed by word (a repartition topic) and counted (a state store with a changelog
// topic) into `output`. Arguments: bootstrap application.id input output protocol.
// It prints one JSON line per change of its state or of its active tasks, and closes (leaving
// the group) when its stdin ends.
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.kstream.Produced;

public final class StreamsWordCount {
    private static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, args[4]);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);   // every count update goes out
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);

        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(args[2])
            .flatMapValues(line -> Arrays.asList(line.toLowerCase().split("\\W+")))
            .groupBy((key, word) -> word)
            .count()
            .toStream()
            .mapValues(count -> Long.toString(count))
            .to(args[3], Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((now, before) -> emit("{\"event\": \"state\", \"state\": \"" + now + "\"}"));
        streams.setUncaughtExceptionHandler(e -> {
            emit("{\"event\": \"error\", \"error\": \"" + e.toString().replace("\"", "'").replace("\n", " ") + "\"}");
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();

        AtomicReference<Boolean> done = new AtomicReference<>(false);
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() != -1) { }
            } catch (Exception e) { }
            done.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        String last = null;
        while (!done.get()) {
            TreeSet<String> active = new TreeSet<>();
            if (streams.state() == KafkaStreams.State.RUNNING) {
                for (ThreadMetadata t : streams.metadataForLocalThreads()) {
                    for (TaskMetadata task : t.activeTasks()) {
                        active.add(task.taskId().toString());
                    }
                }
                String now = String.join("\", \"", active);
                if (!now.equals(last)) {
                    last = now;
                    emit("{\"event\": \"tasks\", \"active\": [" + (active.isEmpty() ? "" : "\"" + now + "\"") + "]}");
                }
            }
            Thread.sleep(100);
        }
        streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
            .withTimeout(Duration.ofSeconds(30)));
        emit("{\"event\": \"closed\"}");
    }
}
