// Apache Kafka's own Java client (kafka-clients from .kafka/<version>/lib) as a test client,
// and Kafka's generated message classes as a frame decoder. Compiled and run by
// tests/java_client.py; every outcome is one JSON line on stdout.
//
//   KprotoClient produce bootstrap=H:P topic=T count=N [codec=gzip] [partition=0]
//   KprotoClient consume bootstrap=H:P topic=T group=G count=N [protocol=classic|consumer]
//                        [isolation=read_uncommitted|read_committed]
//   KprotoClient txn bootstrap=H:P topic=T group=G txn=ID
//   KprotoClient admin bootstrap=H:P topic=T [group=G]
//   KprotoClient share bootstrap=H:P topic=T group=G count=N
//   KprotoClient shareadmin bootstrap=H:P topic=T group=G   (an empty share group with state on T-0)
//   KprotoClient decode            (stdin: "request|response API_KEY API_VERSION FILE" lines)
//
// A scenario that fails prints {"event":"error","type":...,"message":...} and exits 1.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DeleteShareGroupOffsetsResult;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.DescribeDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.RenewDelegationTokenOptions;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.RequestHeaderDataJsonConverter;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.message.ResponseHeaderDataJsonConverter;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class KprotoClient {
    static final ObjectMapper JSON = new ObjectMapper();
    // A safety net only: every wait below ends on its event, not on this.
    static final Duration DEADLINE = Duration.ofSeconds(90);

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 1; i < argv.length; i++) {
            String[] kv = argv[i].split("=", 2);
            a.put(kv[0], kv.length > 1 ? kv[1] : "");
        }
        String scenario = argv.length > 0 ? argv[0] : "";
        try {
            switch (scenario) {
                case "produce": produce(a); break;
                case "failover": failover(a); break;
                case "consume": consume(a); break;
                case "txn": txn(a); break;
                case "admin": admin(a); break;
                case "share": share(a); break;
                case "shareadmin": shareAdmin(a); break;
                case "tokens": tokens(a); break;
                case "decode": decode(); break;
                default:
                    System.err.println("usage: KprotoClient produce|consume|txn|admin|share|shareadmin|tokens|decode key=value...");
                    System.exit(2);
            }
        } catch (Throwable t) {
            Throwable cause = t instanceof ExecutionException && t.getCause() != null ? t.getCause() : t;
            emit(obj("event", "error").put("type", cause.getClass().getName())
                     .put("message", String.valueOf(cause.getMessage())));
            System.out.flush();
            System.exit(1);
        }
        System.out.flush();
        System.exit(0);   // the clients' non-daemon threads must not keep the JVM up
    }

    static ObjectNode obj(String k, String v) {
        return JSON.createObjectNode().put(k, v);
    }

    static void emit(JsonNode node) {
        System.out.println(node.toString());
        System.out.flush();
    }

    static String str(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    static Properties common(Map<String, String> a) {
        Properties p = new Properties();
        p.put("bootstrap.servers", a.get("bootstrap"));
        p.put("client.id", a.getOrDefault("client", "kproto-java"));
        return p;
    }

    static KafkaProducer<byte[], byte[]> producer(Map<String, String> a, Properties extra) {
        Properties p = common(a);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, a.getOrDefault("codec", "none"));
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.putAll(extra);
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    static ProducerRecord<byte[], byte[]> record(String topic, Integer partition, String key, String value) {
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, partition, key.getBytes(StandardCharsets.UTF_8),
                value.getBytes(StandardCharsets.UTF_8));
        r.headers().add("h", key.getBytes(StandardCharsets.UTF_8));
        return r;
    }

    static void sent(RecordMetadata m, String key) {
        emit(obj("event", "produced").put("key", key).put("partition", m.partition()).put("offset", m.offset()));
    }

    /** acks=all, idempotent: every send acknowledged, in order. */
    static void produce(Map<String, String> a) throws Exception {
        int n = Integer.parseInt(a.get("count"));
        Integer partition = a.containsKey("partition") ? Integer.valueOf(a.get("partition")) : null;
        try (KafkaProducer<byte[], byte[]> p = producer(a, new Properties())) {
            List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                fs.add(p.send(record(a.get("topic"), partition, "k" + i, "v" + i)));
            }
            p.flush();
            for (int i = 0; i < n; i++) {
                sent(fs.get(i).get(), "k" + i);
            }
        }
        emit(obj("event", "done"));
    }

    /** One idempotent acks=all producer across a leader kill: ``count`` records, "waiting" once
     *  they are acknowledged, a line read on stdin (the test kills the leader meanwhile), ``count``
     *  more on the same producer; then a fresh consumer (no group) reads the partition from the start. */
    static void failover(Map<String, String> a) throws Exception {
        int n = Integer.parseInt(a.get("count"));
        String topic = a.get("topic");
        Properties extra = new Properties();
        extra.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "120000");
        try (KafkaProducer<byte[], byte[]> p = producer(a, extra)) {
            for (int round = 0; round < 2; round++) {
                List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
                for (int i = round * n; i < (round + 1) * n; i++) {
                    fs.add(p.send(record(topic, 0, "k" + i, "v" + i)));
                }
                p.flush();
                for (int i = 0; i < n; i++) {
                    sent(fs.get(i).get(), "k" + (round * n + i));
                }
                if (round == 0) {
                    emit(obj("event", "waiting"));
                    new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
                }
            }
        }
        Properties c = common(a);
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long endOffset = consumer.endOffsets(List.of(tp)).get(tp);
            long end = System.nanoTime() + DEADLINE.toNanos();
            while (consumer.position(tp) < endOffset && System.nanoTime() < end) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    consumed(r);
                }
            }
        }
        emit(obj("event", "done"));
    }

    static Properties consumerProps(Map<String, String> a) {
        Properties p = common(a);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, a.get("group"));
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        return p;
    }

    static void consumed(ConsumerRecord<byte[], byte[]> r) {
        ObjectNode o = obj("event", "consumed").put("topic", r.topic()).put("partition", r.partition())
                .put("offset", r.offset()).put("key", str(r.key())).put("value", str(r.value()));
        ArrayNode hs = o.putArray("headers");
        for (Header h : r.headers()) {
            hs.addArray().add(h.key()).add(str(h.value()));
        }
        emit(o);
    }

    /** Subscribe, read ``count`` records, commitSync, then print what the group committed. */
    static void consume(Map<String, String> a) throws Exception {
        Properties p = consumerProps(a);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, a.getOrDefault("protocol", "classic"));
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, a.getOrDefault("isolation", "read_uncommitted"));
        int want = Integer.parseInt(a.get("count"));
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(List.of(a.get("topic")));
            int got = 0;
            long end = System.nanoTime() + DEADLINE.toNanos();
            while (got < want && System.nanoTime() < end) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    consumed(r);
                    got++;
                }
            }
            if (got < want) {
                throw new IllegalStateException("consumed " + got + " of " + want + " records");
            }
            // Read on to the end (the last stable offset when read_committed): a record
            // delivered twice, or one that should stay hidden, shows up as one more line.
            Map<TopicPartition, Long> ends = c.endOffsets(c.assignment());
            while (System.nanoTime() < end && ends.entrySet().stream().anyMatch(e -> c.position(e.getKey()) < e.getValue())) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    consumed(r);
                }
            }
            c.commitSync();
            Map<TopicPartition, OffsetAndMetadata> committed = c.committed(c.assignment());
            List<TopicPartition> parts = new ArrayList<>(committed.keySet());
            parts.sort(java.util.Comparator.comparingInt(TopicPartition::partition));
            for (TopicPartition tp : parts) {
                OffsetAndMetadata m = committed.get(tp);
                emit(obj("event", "committed").put("partition", tp.partition()).put("offset", m == null ? -1 : m.offset()));
            }
        }
        emit(obj("event", "done"));
    }

    /** A committed transaction (two records and the group's offset), then an aborted one. */
    static void txn(Map<String, String> a) throws Exception {
        Properties extra = new Properties();
        extra.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, a.get("txn"));
        String topic = a.get("topic");
        // The group's metadata as a consumer of that group hands it over (KafkaConsumer.groupMetadata).
        Properties cp = consumerProps(a);
        try (KafkaProducer<byte[], byte[]> p = producer(a, extra);
             KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            p.initTransactions();
            emit(obj("event", "initialized"));
            p.beginTransaction();
            sent(p.send(record(topic, 0, "c0", "committed 0")).get(), "c0");
            sent(p.send(record(topic, 0, "c1", "committed 1")).get(), "c1");
            p.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(2)),
                    c.groupMetadata());
            p.commitTransaction();
            emit(obj("event", "committed"));
            p.beginTransaction();
            sent(p.send(record(topic, 0, "a0", "aborted 0")).get(), "a0");
            p.abortTransaction();
            emit(obj("event", "aborted"));
        }
        emit(obj("event", "done"));
    }

    /** Create, describe, list offsets, delete records, delete: each answer as a line. */
    static Admin saslAdmin(Map<String, String> a, String user, String password, boolean token) {
        Properties p = common(a);
        p.put("bootstrap.servers", a.get("sasl"));
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "SCRAM-SHA-256");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                + user + "\" password=\"" + password + "\"" + (token ? " tokenauth=\"true\"" : "") + ";");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        return Admin.create(p);
    }

    static String errorOf(Throwable t) {
        Throwable c = t instanceof ExecutionException && t.getCause() != null ? t.getCause() : t;
        return c.getClass().getSimpleName();
    }

    /** Kafka's broker learns credentials and tokens from its controller a moment after the answer:
     *  ask again until the call works (the broker's answer is the event waited on). */
    static Admin authenticated(Map<String, String> a, String user, String password, boolean token) throws Exception {
        long end = System.nanoTime() + DEADLINE.toNanos();
        while (true) {
            Admin admin = saslAdmin(a, user, password, token);
            try {
                admin.describeCluster().nodes().get();
                return admin;
            } catch (ExecutionException e) {
                admin.close();
                if (System.nanoTime() > end) {
                    throw e;
                }
            }
        }
    }

    static String hmacText(DelegationToken t) {
        return java.util.Base64.getEncoder().encodeToString(t.hmac());
    }

    /** Delegation tokens through the Admin API: SCRAM users, a token created, described,
     *  renewed, used to authenticate, refused over PLAINTEXT and over the token's own
     *  connection, expired; each outcome one event. */
    static void tokens(Map<String, String> a) throws Exception {
        Properties plain = common(a);
        String pw = "secret-pw";
        try (Admin admin = Admin.create(plain)) {
            List<UserScramCredentialUpsertion> ups = new ArrayList<>();
            for (String u : List.of("alice", "bob", "carol")) {
                ups.add(new UserScramCredentialUpsertion(u, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), pw));
            }
            admin.alterUserScramCredentials(new ArrayList<>(ups)).all().get();
            try {
                admin.createDelegationToken().delegationToken().get();
                emit(obj("event", "plaintext_create").put("error", "none"));
            } catch (ExecutionException e) {
                emit(obj("event", "plaintext_create").put("error", errorOf(e)));
            }
        }
        KafkaPrincipal bob = new KafkaPrincipal("User", "bob");
        DelegationToken token;
        try (Admin alice = authenticated(a, "alice", pw, false)) {
            long before = System.currentTimeMillis();
            try {
                token = alice.createDelegationToken(new CreateDelegationTokenOptions()
                        .renewers(List.of(bob)).maxLifetimeMs(3600000)).delegationToken().get();
            } catch (ExecutionException e) {
                emit(obj("event", "created").put("error", errorOf(e)));
                return;
            }
            var info = token.tokenInfo();
            emit(obj("event", "created").put("error", "none").put("owner", info.ownerAsString())
                    .put("requester", info.tokenRequester().toString()).put("renewers", info.renewersAsString().toString())
                    .put("max_minus_issue", info.maxTimestamp() - info.issueTimestamp())
                    .put("expiry_is_max", info.expiryTimestamp() == info.maxTimestamp())
                    .put("issued_now", info.issueTimestamp() >= before - 1000)
                    .put("hmac_bytes", token.hmac().length).put("token_id_set", !info.tokenId().isEmpty()));
            String id = info.tokenId();
            long end = System.nanoTime() + DEADLINE.toNanos();
            List<DelegationToken> all = List.of();
            while (System.nanoTime() < end) {
                all = alice.describeDelegationToken().delegationTokens().get();
                if (all.stream().anyMatch(t -> t.tokenInfo().tokenId().equals(id))) {
                    break;
                }
            }
            emit(obj("event", "described").put("mine", all.stream().filter(t -> t.tokenInfo().tokenId().equals(id)
                    && java.util.Arrays.equals(t.hmac(), token.hmac())).count()));
            for (String owner : List.of("bob", "carol")) {
                long n = alice.describeDelegationToken(new DescribeDelegationTokenOptions()
                        .owners(List.of(new KafkaPrincipal("User", owner)))).delegationTokens().get()
                        .stream().filter(t -> t.tokenInfo().tokenId().equals(id)).count();
                emit(obj("event", "described_by_owner").put("owner", owner).put("count", n));
            }
            long renewedAt = System.currentTimeMillis();
            long expiry = alice.renewDelegationToken(token.hmac(), new RenewDelegationTokenOptions()
                    .renewTimePeriodMs(600000)).expiryTimestamp().get();
            emit(obj("event", "renewed").put("in_period", expiry >= renewedAt + 600000 - 1000
                    && expiry <= System.currentTimeMillis() + 600000));
        }
        try (Admin carol = authenticated(a, "carol", pw, false)) {
            long n = carol.describeDelegationToken().delegationTokens().get().size();
            emit(obj("event", "carol_describes").put("count", n));
            try {
                carol.renewDelegationToken(token.hmac()).expiryTimestamp().get();
                emit(obj("event", "carol_renews").put("error", "none"));
            } catch (ExecutionException e) {
                emit(obj("event", "carol_renews").put("error", errorOf(e)));
            }
        }
        try (Admin holder = authenticated(a, token.tokenInfo().tokenId(), hmacText(token), true)) {
            emit(obj("event", "token_authenticated").put("nodes", holder.describeCluster().nodes().get().size()));
            try {
                holder.createDelegationToken().delegationToken().get();
                emit(obj("event", "token_creates").put("error", "none"));
            } catch (ExecutionException e) {
                emit(obj("event", "token_creates").put("error", errorOf(e)));
            }
            try {
                holder.describeDelegationToken().delegationTokens().get();
                emit(obj("event", "token_describes").put("error", "none"));
            } catch (ExecutionException e) {
                emit(obj("event", "token_describes").put("error", errorOf(e)));
            }
        }
        try (Admin bobAdmin = authenticated(a, "bob", pw, false)) {
            bobAdmin.expireDelegationToken(token.hmac(), new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1))
                    .expiryTimestamp().get();
            emit(obj("event", "expired_by_renewer").put("error", "none"));
            long end = System.nanoTime() + DEADLINE.toNanos();
            String error = "none";
            while (System.nanoTime() < end) {
                try {
                    bobAdmin.renewDelegationToken(token.hmac()).expiryTimestamp().get();
                } catch (ExecutionException e) {
                    error = errorOf(e);
                    break;
                }
            }
            emit(obj("event", "renew_after_expiry").put("error", error));
        }
        try (Admin gone = saslAdmin(a, token.tokenInfo().tokenId(), hmacText(token), true)) {
            gone.describeCluster().nodes().get();
            emit(obj("event", "expired_token_auth").put("error", "none"));
        } catch (ExecutionException e) {
            emit(obj("event", "expired_token_auth").put("error", errorOf(e)));
        }
        emit(obj("event", "done"));
    }

    static void admin(Map<String, String> a) throws Exception {
        Properties p = common(a);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        String topic = a.get("topic");
        try (Admin admin = Admin.create(p)) {
            DescribeClusterResult cluster = admin.describeCluster();
            emit(obj("event", "cluster").put("nodes", cluster.nodes().get().size())
                    .put("controller_known", cluster.controller().get() != null)
                    .put("cluster_id_set", cluster.clusterId().get() != null));
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get();
            emit(obj("event", "created").put("topic", topic));
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            ObjectNode o = obj("event", "described").put("topic", d.name()).put("internal", d.isInternal())
                    .put("partitions", d.partitions().size());
            o.put("replicas", d.partitions().get(0).replicas().size()).put("topic_id_set", d.topicId() != null);
            emit(o);
            // two partitions a response: Admin follows DescribeTopicPartitions' cursor for the third
            TopicDescription paged = admin.describeTopics(List.of(topic),
                    new DescribeTopicsOptions().partitionSizeLimitPerResponse(2)).allTopicNames().get().get(topic);
            emit(obj("event", "described_paged").put("partitions", paged.partitions().size()));
            try (KafkaProducer<byte[], byte[]> prod = producer(a, new Properties())) {
                for (int i = 0; i < 3; i++) {
                    prod.send(record(topic, 0, "k" + i, "v" + i)).get();
                }
            }
            TopicPartition tp0 = new TopicPartition(topic, 0);
            listOffsets(admin, tp0, "before");
            long low = admin.deleteRecords(Map.of(tp0, RecordsToDelete.beforeOffset(2)))
                    .lowWatermarks().get(tp0).get().lowWatermark();
            emit(obj("event", "deleted_records").put("low_watermark", low));
            listOffsets(admin, tp0, "after");
            String group = a.get("group");
            if (group != null) {
                List<String> groups = new ArrayList<>();
                for (GroupListing g : admin.listGroups().all().get()) {
                    groups.add(g.groupId());
                }
                emit(obj("event", "groups").put("listed", groups.contains(group)));
                ConsumerGroupDescription g = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
                emit(obj("event", "group").put("group", g.groupId()).put("state", g.groupState().toString())
                        .put("members", g.members().size()));
            }
            admin.deleteTopics(List.of(topic)).all().get();
            emit(obj("event", "deleted").put("topic", topic));
            Set<String> names = admin.listTopics().names().get();
            emit(obj("event", "listed").put("present", names.contains(topic)));
        }
        emit(obj("event", "done"));
    }

    static void listOffsets(Admin admin, TopicPartition tp, String when) throws Exception {
        ListOffsetsResult.ListOffsetsResultInfo earliest = admin.listOffsets(Map.of(tp, OffsetSpec.earliest()))
                .partitionResult(tp).get();
        ListOffsetsResult.ListOffsetsResultInfo latest = admin.listOffsets(Map.of(tp, OffsetSpec.latest()))
                .partitionResult(tp).get();
        emit(obj("event", "offsets").put("when", when).put("earliest", earliest.offset()).put("latest", latest.offset()));
    }

    /** KIP-932 share group: read ``count`` records, accept them, commitSync. */
    static void share(Map<String, String> a) throws Exception {
        Properties p = common(a);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, a.get("group"));
        p.put("share.acknowledgement.mode", "explicit");
        int want = Integer.parseInt(a.get("count"));
        // A share group starts at the latest offset unless told otherwise (GroupConfig share.auto.offset.reset).
        try (Admin admin = Admin.create(common(a))) {
            ConfigResource group = new ConfigResource(ConfigResource.Type.GROUP, a.get("group"));
            admin.incrementalAlterConfigs(Map.of(group, List.of(new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)))).all().get();
        }
        try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            c.subscribe(List.of(a.get("topic")));
            int got = 0;
            long end = System.nanoTime() + DEADLINE.toNanos();
            while (got < want && System.nanoTime() < end) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    consumed(r);
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                    got++;
                }
            }
            if (got < want) {
                throw new IllegalStateException("consumed " + got + " of " + want + " records");
            }
            c.commitSync();
        }
        emit(obj("event", "done"));
    }

    /** The share-group admin calls on an empty share group: describe, list offsets, alter, delete. */
    static void shareAdmin(Map<String, String> a) throws Exception {
        String group = a.get("group");
        String topic = a.get("topic");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Admin.create(common(a))) {
            ShareGroupDescription d = admin.describeShareGroups(List.of(group)).all().get().get(group);
            emit(obj("event", "described").put("state", d.groupState().toString()).put("members", d.members().size()));
            shareOffsets(admin, group, "before");
            admin.alterShareGroupOffsets(group, Map.of(tp, 1L)).all().get();
            shareOffsets(admin, group, "altered");
            try {
                admin.alterShareGroupOffsets(group, Map.of(new TopicPartition("no-such", 0), 0L)).all().get();
                emit(obj("event", "alter-unknown").put("error", "none"));
            } catch (ExecutionException e) {
                emit(obj("event", "alter-unknown").put("error", e.getCause().getClass().getName())
                        .put("message", e.getCause().getMessage()));
            }
            DeleteShareGroupOffsetsResult deleted = admin.deleteShareGroupOffsets(group, Set.of(topic, "no-such"));
            for (String t : List.of(topic, "no-such")) {
                ObjectNode e = obj("event", "delete").put("topic", t);
                try {
                    deleted.topicResult(t).get();
                    e.put("error", "none");
                } catch (ExecutionException x) {
                    e.put("error", x.getCause().getClass().getName()).put("message", x.getCause().getMessage());
                }
                emit(e);
            }
            shareOffsets(admin, group, "deleted");
            try {
                admin.deleteShareGroupOffsets("no-such-group", Set.of(topic)).all().get();
                emit(obj("event", "delete-unknown-group").put("error", "none"));
            } catch (ExecutionException e) {
                emit(obj("event", "delete-unknown-group").put("error", e.getCause().getClass().getName())
                        .put("message", e.getCause().getMessage()));
            }
        }
        emit(obj("event", "done"));
    }

    static void shareOffsets(Admin admin, String group, String when) throws Exception {
        Map<TopicPartition, SharePartitionOffsetInfo> offsets = admin.listShareGroupOffsets(
                Map.of(group, new ListShareGroupOffsetsSpec())).partitionsToOffsetInfo(group).get();
        ArrayNode rows = JSON.createArrayNode();
        for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : offsets.entrySet()) {
            SharePartitionOffsetInfo o = e.getValue();
            rows.add(obj("partition", e.getKey().toString()).put("start", o == null ? -1 : o.startOffset())
                    .put("leaderEpoch", o == null ? -1 : o.leaderEpoch().orElse(-1))
                    .put("lag", o == null ? -1 : o.lag().orElse(-1L)));
        }
        ObjectNode out = obj("event", "offsets").put("when", when);
        out.set("partitions", rows);
        emit(out);
    }

    /**
     * Each frame (header included, no size prefix) read by Kafka's generated classes:
     * RequestHeaderData/ResponseHeaderData, then ApiMessageType's request or response data
     * class, printed by its generated JsonConverter (records as their size, serializeRecords=false).
     * Bytes left after the body are ignored, as Kafka's readers do.
     */
    static void decode() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) {
                continue;
            }
            String[] f = line.split(" ", 4);
            ObjectNode out = obj("file", f[3]);
            try {
                ApiKeys key = ApiKeys.forId(Integer.parseInt(f[1]));
                short version = Short.parseShort(f[2]);
                ByteBufferAccessor buf = new ByteBufferAccessor(ByteBuffer.wrap(Files.readAllBytes(Path.of(f[3]))));
                ApiMessage body;
                if (f[0].equals("request")) {
                    short hv = key.requestHeaderVersion(version);
                    out.set("header", RequestHeaderDataJsonConverter.write(new RequestHeaderData(buf, hv), hv));
                    body = key.messageType.newRequest();
                } else {
                    short hv = key.responseHeaderVersion(version);
                    out.set("header", ResponseHeaderDataJsonConverter.write(new ResponseHeaderData(buf, hv), hv));
                    body = key.messageType.newResponse();
                }
                body.read(buf, version);
                Class<?> converter = Class.forName(body.getClass().getName() + "JsonConverter");
                Method write = converter.getMethod("write", body.getClass(), short.class, boolean.class);
                out.set("body", (JsonNode) write.invoke(null, body, version, false));
            } catch (Throwable t) {
                Throwable cause = t instanceof java.lang.reflect.InvocationTargetException ? t.getCause() : t;
                out.put("error", cause.getClass().getName() + ": " + cause.getMessage());
            }
            emit(out);
        }
    }
}
