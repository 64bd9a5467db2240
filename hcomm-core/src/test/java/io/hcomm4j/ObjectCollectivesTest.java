package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.hcomm4j.testing.RandomObjects;
import io.hcomm4j.testing.Ranks;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The object collectives on real ranks (threads of this JVM, each its own session, over shared memory or TCP; 1, 2, 3, 5
 * and 8 ranks, one job per rank count and transport running the scenarios in turn): every
 * object of every call checked on every rank, against what each rank computes from the shared seed; a refusal on one
 * rank failing the call on every rank, naming it, with the communicator usable afterwards; codecs plugged in.
 */
class ObjectCollectivesTest {
    private static final int BIG = 5 << 20;

    record Point(int x, int y) {
    }

    /** Serializable, but not in the receivers' allow-list. */
    static final class Secret implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        final String text;

        Secret(String text) {
            this.text = text;
        }
    }

    /** The object rank {@code rank} contributes in {@code round}: random nested values, with the odd null, empty and 5 MB one. */
    private static Object objectOf(long seed, int rank, int round, int n) {
        Random random = new Random(seed + 1009L * round + rank);
        // the first all-gather, the first gather, the scatter from rank 0 and the ring all carry one 5 MB object
        if (rank == n - 1 && round % 10 == 0) return RandomObjects.bytes(random, BIG);
        return switch ((round + rank) % 7) {
            case 0 -> null;
            case 1 -> "";
            case 2 -> new ArrayList<>();
            default -> RandomObjects.value(random, 4);
        };
    }

    /** The 5 MB objects as receivers expect them, by seed, round and rank count: made once per job, not once per rank. */
    private static final Map<List<Long>, Object> EXPECTED_BIG = new ConcurrentHashMap<>();

    /** {@link #objectOf}, for comparing with what arrived (the sender makes its own). */
    private static Object expected(long seed, int rank, int round, int n) {
        if (rank != n - 1 || round % 10 != 0) return objectOf(seed, rank, round, n);
        return EXPECTED_BIG.computeIfAbsent(List.of(seed, (long) round, (long) n), key -> objectOf(seed, rank, round, n));
    }

    private static void assertSame(Object expected, Object got, String what) {
        assertThat(RandomObjects.difference(expected, got)).as(what).isNull();
    }

    /**
     * One job per rank count and transport (its sessions and connections set up once) runs the scenarios below it is
     * listed for: every object reaching every rank on all of them; the refusals on 2, 3 and 5 ranks over shared memory
     * and 3 and 5 over TCP; the plugged codecs on 3 ranks over each transport.
     */
    @ParameterizedTest(name = "{0} ranks over {1}")
    @CsvSource({"1, AUTO", "2, AUTO", "3, AUTO", "5, AUTO", "8, AUTO", "2, TCP", "3, TCP", "5, TCP", "8, TCP"})
    void objectCollectivesOnRealRanks(int n, CommConfig.Transport transport) throws Exception {
        long seed = new Random(17L * n + transport.ordinal()).nextLong();
        boolean refusals = n == 3 || n == 5 || (n == 2 && transport == CommConfig.Transport.AUTO);
        try {
            Ranks.runThreads(n, Duration.ofMinutes(6), b -> b.transport(transport), h -> {
                Communicator c = h.world();
                everyObjectReachesEveryRankItShould(c, seed);
                if (n == 3) pluggedCodecsCarryTheirObjectsAndTheirRefusals(c);
                if (refusals) aRefusalOnOneRankFailsTheCallOnEveryRankNamingIt(c);
            });
        } finally {
            EXPECTED_BIG.clear();
        }
    }

    /** Every object of every call, checked on every rank. */
    private static void everyObjectReachesEveryRankItShould(Communicator c, long seed) {
        int n = c.size();
        int me = c.rank();
        for (int round = 0; round < 3; round++) {
            List<Object> all = c.allGatherObject(objectOf(seed, me, round, n));
            assertThat(all).hasSize(n);
            for (int r = 0; r < n; r++) assertSame(expected(seed, r, round, n), all.get(r), "allGather round " + round + " of rank " + r);
        }
        for (int root = 0; root < n; root++) {
            int round = 10 + root;
            Object got = c.broadcastObject(me == root ? objectOf(seed, root, round, n) : null, root);
            assertSame(expected(seed, root, round, n), got, "broadcast from " + root);
        }
        Object big = c.broadcastObject(me == 0 ? List.of("big", RandomObjects.bytes(new Random(seed), BIG)) : null, 0);
        assertSame(EXPECTED_BIG.computeIfAbsent(List.of(seed), key -> List.of("big", RandomObjects.bytes(new Random(seed), BIG))), big,
                "5 MB broadcast");
        for (int root = 0; root < n; root++) {
            int round = 20 + root;
            List<Object> gathered = c.gatherObject(objectOf(seed, me, round, n), root);
            if (me != root) {
                assertThat(gathered).isNull();
                continue;
            }
            assertThat(gathered).hasSize(n);
            for (int r = 0; r < n; r++) assertSame(expected(seed, r, round, n), gathered.get(r), "gather to " + root + " of rank " + r);
        }
        for (int root = 0; root < n; root++) {
            int round = 30 + root;
            List<Object> objs = null;
            if (me == root) {
                objs = new ArrayList<>();
                for (int r = 0; r < n; r++) objs.add(objectOf(seed, r, round, n));
            }
            assertSame(expected(seed, me, round, n), c.scatterObject(objs, root), "scatter from " + root);
        }
        // point to point: around the ring (async sends, so one rank talking to itself cannot block), then all to rank 0
        CommFuture<Void> sent = c.sendObjectAsync(objectOf(seed, me, 40, n), (me + 1) % n, 40);
        assertSame(expected(seed, (me + n - 1) % n, 40, n), c.recvObject((me + n - 1) % n, 40), "ring recv");
        sent.await();
        if (me != 0) {
            c.sendObject(java.util.Arrays.asList(me, objectOf(seed, me, 41, n)), 0, 41);
        } else {
            for (int i = 1; i < n; i++) {
                List<Object> fromAndPayload = c.recvObject(Communicator.ANY_SOURCE, 41);
                int from = (Integer) fromAndPayload.get(0);
                assertSame(expected(seed, from, 41, n), fromAndPayload.get(1), "any-source recv from " + from);
            }
        }
        // records, typed through a codec that was given them
        ObjectCodec<Object> points = ObjectCodec.standard(Point.class);
        List<Point> ps = c.allGatherObject(new Point(me, -me), points);
        for (int r = 0; r < n; r++) assertThat(ps.get(r)).isEqualTo(new Point(r, -r));
    }

    /** One rank's bad call and what every rank should see. */
    private record Refusal(String op, String reason, Consumer<Communicator> culpritCall, Consumer<Communicator> othersCall,
                           int culprit) {
    }

    private static List<Refusal> refusals(int n) {
        Object unencodable = List.of(1, new ArrayDeque<>(List.of(2)));
        String deque = "ObjectCodec.standard() cannot encode value[1]: a java.util.ArrayDeque is none of the types it encodes";
        ObjectCodec<Object> failing = new ObjectCodec<>() {
            @Override
            public byte[] encode(Object value) {
                throw new IllegalStateException("boom");
            }

            @Override
            public Object decode(byte[] bytes) {
                return null;
            }

            @Override
            public String toString() {
                return "FailingCodec";
            }
        };
        List<Object> nOk = new ArrayList<>();
        for (int r = 0; r < n; r++) nOk.add(r);
        List<Object> secondBad = new ArrayList<>(nOk);
        secondBad.set(1, new Object());
        List<Refusal> list = new ArrayList<>();
        list.add(new Refusal("allGatherObject", deque, c -> c.allGatherObject(unencodable), c -> c.allGatherObject("fine"), 0));
        list.add(new Refusal("gatherObject", deque, c -> c.gatherObject(unencodable, 0), c -> c.gatherObject("fine", 0), n - 1));
        list.add(new Refusal("gatherObject", "FailingCodec failed: java.lang.IllegalStateException: boom",
                c -> c.gatherObject("x", n - 1, failing), c -> c.gatherObject("x", n - 1, ObjectCodec.standard()), n - 1));
        list.add(new Refusal("broadcastObject", deque, c -> c.broadcastObject(unencodable, 1), c -> c.broadcastObject(null, 1), 1));
        list.add(new Refusal("scatterObject", "objs has 1 elements, needs " + n + " (one per rank)",
                c -> c.scatterObject(List.of("one"), 0), c -> c.scatterObject(null, 0), 0));
        list.add(new Refusal("scatterObject", "objs is null", c -> c.scatterObject(null, n - 1), c -> c.scatterObject(null, n - 1), n - 1));
        list.add(new Refusal("scatterObject", "objs[1]: ObjectCodec.standard() cannot encode the value: a java.lang.Object is none",
                c -> c.scatterObject(secondBad, 1), c -> c.scatterObject(null, 1), 1));
        return list;
    }

    /** A refusal on one rank fails the call on every rank, naming it, and the communicator goes on. */
    private static void aRefusalOnOneRankFailsTheCallOnEveryRankNamingIt(Communicator c) {
        int n = c.size();
        int me = c.rank();
        for (Refusal bad : refusals(n)) {
            long start = System.nanoTime();
            Throwable thrown = catchThrowable(() -> (me == bad.culprit() ? bad.culpritCall() : bad.othersCall()).accept(c));
            if (me == bad.culprit()) {
                assertThat(thrown).as("%s refused on rank %d, its own call", bad.op(), me)
                        .isExactlyInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("rank " + me + ": " + bad.op() + ": " + bad.reason());
            } else {
                assertThat(thrown).as("%s refused on rank %d, seen on rank %d", bad.op(), bad.culprit(), me)
                        .isExactlyInstanceOf(CollectiveMismatchException.class)
                        .hasMessageStartingWith("rank " + me + ": " + bad.op() + " fails on every rank: rank " + bad.culprit()
                                + " refused its own arguments: " + bad.reason());
            }
            // told, not timed out (HCOMM_TIMEOUT is a minute here)
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));
            assertThat(c.allGatherObject(me)).as("after %s", bad.op()).containsExactlyElementsOf(range(n));
        }
        if (n >= 3) {
            // two ranks refuse at once: each gets its own reason, the others hear of the first and the count
            Throwable thrown = catchThrowable(() -> c.allGatherObject(me == 1 || me == 2 ? new Object() : me));
            if (me == 1 || me == 2) {
                assertThat(thrown).isExactlyInstanceOf(IllegalArgumentException.class).hasMessageContaining("java.lang.Object");
            } else {
                assertThat(thrown).isExactlyInstanceOf(CollectiveMismatchException.class)
                        .hasMessageContaining("rank 1 refused its own arguments").hasMessageEndingWith("(and 1 other ranks refused theirs)");
            }
        }
        // point to point: the receiver hears of the sender's refusal instead of waiting for a message
        int sender = n - 1;
        if (me == sender) {
            assertThat(catchThrowable(() -> c.sendObject(new ArrayDeque<>(), 0, 5))).isExactlyInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("rank " + me + ": sendObject: ObjectCodec.standard() cannot encode the value: a java.util.ArrayDeque");
        } else if (me == 0) {
            assertThat(catchThrowable(() -> c.recvObject(sender, 5))).isExactlyInstanceOf(HcommException.class)
                    .hasMessageStartingWith("rank 0: recvObject: rank " + sender + " (tag 5) refused its own arguments: "
                            + "ObjectCodec.standard() cannot encode the value: a java.util.ArrayDeque");
        }
        assertThat(c.allGatherObject(me)).containsExactlyElementsOf(range(n));
    }

    private static List<Integer> range(int n) {
        List<Integer> r = new ArrayList<>();
        for (int i = 0; i < n; i++) r.add(i);
        return r;
    }

    /** A hand-written codec of Points (8 bytes), as a user would plug in; it does not override decode(bytes, off, len). */
    private static final ObjectCodec<Point> POINTS = new ObjectCodec<>() {
        @Override
        public byte[] encode(Point p) {
            return ByteBuffer.allocate(8).putInt(p.x()).putInt(p.y()).array();
        }

        @Override
        public Point decode(byte[] bytes) {
            if (bytes.length != 8) throw new IllegalArgumentException("a Point is 8 bytes, not " + bytes.length);
            ByteBuffer b = ByteBuffer.wrap(bytes);
            return new Point(b.getInt(), b.getInt());
        }
    };

    /** Codecs plugged in (a user's, Java serialization) carry their objects, and a receiver's refusal names the sender; 3 ranks. */
    private static void pluggedCodecsCarryTheirObjectsAndTheirRefusals(Communicator c) {
        int n = c.size();
        int me = c.rank();
        // a user codec, typed end to end
        List<Point> all = c.allGatherObject(new Point(me, me * me), POINTS);
        for (int r = 0; r < n; r++) assertThat(all.get(r)).isEqualTo(new Point(r, r * r));
        Point p = c.broadcastObject(me == 2 ? new Point(7, 8) : null, 2, POINTS);
        assertThat(p).isEqualTo(new Point(7, 8));
        List<Point> gathered = c.gatherObject(new Point(-me, 0), 1, POINTS);
        if (me == 1) assertThat(gathered).containsExactly(new Point(0, 0), new Point(-1, 0), new Point(-2, 0));
        else assertThat(gathered).isNull();
        Point mine = c.scatterObject(me == 0 ? List.of(new Point(0, 1), new Point(1, 1), new Point(2, 1)) : null, 0, POINTS);
        assertThat(mine).isEqualTo(new Point(me, 1));
        CommFuture<Void> sent = c.sendObjectAsync(new Point(me, 42), (me + 1) % n, 9, POINTS);
        Point fromLeft = c.recvObject((me + n - 1) % n, 9, POINTS);
        assertThat(fromLeft).isEqualTo(new Point((me + n - 1) % n, 42));
        sent.await();

        // Java serialization, opt-in: the allowed classes travel
        ObjectCodec<Object> lists = ObjectCodec.javaSerialization(ArrayList.class, LinkedHashMap.class);
        Map<String, List<Integer>> table = new LinkedHashMap<>();
        table.put("rank", new ArrayList<>(List.of(me)));
        List<Object> tables = c.allGatherObject(table, lists);
        for (int r = 0; r < n; r++) assertThat(tables.get(r)).isEqualTo(Map.of("rank", List.of(r)));
        // ... and a class the receiver did not allow is refused there, after the bytes moved, naming the sender
        ObjectCodec<Object> codec = me == 0 ? ObjectCodec.javaSerialization(ArrayList.class, Secret.class) : lists;
        Throwable thrown = catchThrowable(() -> c.broadcastObject(me == 0 ? new ArrayList<>(List.of(new Secret("s"))) : null, 0, codec));
        if (me == 0) {
            assertThat(thrown).isNull();
        } else {
            assertThat(thrown).isExactlyInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("rank " + me + ": broadcastObject: the object of root 0 cannot be decoded: "
                            + "ObjectCodec.javaSerialization(ArrayList, LinkedHashMap) refuses to decode a " + Secret.class.getName()
                            + ": not in its allow-list");
        }
        assertThat(c.allGatherObject(me)).containsExactlyElementsOf(range(n));
    }
}
