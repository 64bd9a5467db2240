package io.hcomm4j.bootstrap;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.CommTimeoutException;
import io.hcomm4j.HcommException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What every {@link Store} must do; subclasses supply the implementation. */
@Timeout(30)
abstract class StoreContractTest {
    private final List<Store> opened = new ArrayList<>();

    /** A new handle on the shared store under test (a new client, or a new instance on the same directory). */
    protected abstract Store connect();

    /** Opens a handle and remembers it, so every test closes what it opened. */
    protected Store store() {
        Store s = connect();
        synchronized (opened) {
            opened.add(s);
        }
        return s;
    }

    @AfterEach
    void closeStores() {
        synchronized (opened) {
            opened.forEach(Store::close);
            opened.clear();
        }
    }

    @Test
    void setThenGetAndTryGet() {
        Store s = store();
        assertThat(s.tryGet("k")).isNull();
        s.set("k", "v1".getBytes(UTF_8));
        assertThat(s.get("k", Duration.ofSeconds(1))).isEqualTo("v1".getBytes(UTF_8));
        s.set("k", "v2".getBytes(UTF_8));
        assertThat(s.tryGet("k")).isEqualTo("v2".getBytes(UTF_8));
        assertThat(store().tryGet("k")).as("seen from another handle").isEqualTo("v2".getBytes(UTF_8));
    }

    @Test
    void emptyLargeAndBinaryValuesRoundTrip() {
        Store s = store();
        byte[] big = new byte[1 << 20];
        for (int i = 0; i < big.length; i++) big[i] = (byte) (i * 31);
        s.set("empty", new byte[0]);
        s.set("big", big);
        assertThat(s.get("empty", Duration.ofSeconds(1))).isEmpty();
        assertThat(store().get("big", Duration.ofSeconds(1))).isEqualTo(big);
    }

    @Test
    void keysWithAnyCharactersStayDistinct() {
        Store s = store();
        List<String> keys = List.of("a", "A", "a/b", "a%2Fb", "..", ".", "rank 0/addr", "ключ", "x".repeat(4096),
                "x".repeat(4095) + "y", "é".repeat(2048));
        for (int i = 0; i < keys.size(); i++) s.set(keys.get(i), new byte[] {(byte) i});
        for (int i = 0; i < keys.size(); i++) {
            assertThat(s.tryGet(keys.get(i))).as("key #%d", i).containsExactly((byte) i);
        }
    }

    @Test
    void badKeysAreRefusedByTheCaller() {
        Store s = store();
        assertThatThrownBy(() -> s.set("", new byte[1])).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.set(null, new byte[1])).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.tryGet("x".repeat(4097))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("4096");
        assertThatThrownBy(() -> s.set("k", null)).isInstanceOf(IllegalArgumentException.class);
        // the store is still usable after refused calls
        s.set("k", new byte[] {1});
        assertThat(s.tryGet("k")).containsExactly(1);
    }

    @Test
    void getWaitsForALaterSetFromAnotherThread() throws Exception {
        Store waiter = store();
        Store setter = store();
        CountDownLatch started = new CountDownLatch(1);
        CompletableFuture<byte[]> got = CompletableFuture.supplyAsync(() -> {
            started.countDown();
            return waiter.get("late", Duration.ofSeconds(10));
        });
        started.await();
        Thread.sleep(100);
        assertThat(got).isNotDone();
        long t0 = System.nanoTime();
        setter.set("late", "here".getBytes(UTF_8));
        assertThat(got.get(5, TimeUnit.SECONDS)).isEqualTo("here".getBytes(UTF_8));
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).as("woken promptly").isLessThan(Duration.ofSeconds(1));
    }

    @Test
    void getTimesOutNamingTheKey() {
        Store s = store();
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> s.get("never-set", Duration.ofMillis(200)))
                .isInstanceOf(CommTimeoutException.class)
                .hasMessageContaining("never-set")
                .hasMessageContaining("200 ms");
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertThat(ms).isBetween(190L, 5000L);
        // usable afterwards
        s.set("after", new byte[] {7});
        assertThat(s.get("after", Duration.ZERO)).containsExactly(7);
    }

    @Test
    void awaitReturnsOnceEveryKeyIsSet() throws Exception {
        Store waiter = store();
        Store setter = store();
        setter.set("w0", new byte[0]);
        CompletableFuture<Void> done = CompletableFuture.runAsync(
                () -> waiter.await(List.of("w0", "w1", "w2"), Duration.ofSeconds(10)));
        Thread.sleep(50);
        setter.set("w1", new byte[0]);
        Thread.sleep(50);
        assertThat(done).isNotDone();
        setter.set("w2", new byte[0]);
        done.get(5, TimeUnit.SECONDS);
        waiter.await(List.of(), Duration.ZERO);
    }

    @Test
    void awaitTimesOutNamingTheMissingKeys() {
        Store s = store();
        s.set("have", new byte[0]);
        assertThatThrownBy(() -> s.await(List.of("have", "lack-1", "lack-2"), Duration.ofMillis(150)))
                .isInstanceOf(CommTimeoutException.class)
                .hasMessageContaining("still missing: [lack-1, lack-2]");
    }

    @Test
    void addCountsFromAbsentAndStoresDecimalText() {
        Store s = store();
        assertThat(s.add("c", 1)).isEqualTo(1);
        assertThat(s.add("c", 2)).isEqualTo(3);
        assertThat(s.get("c", Duration.ZERO)).isEqualTo("3".getBytes(UTF_8));
        assertThat(s.add("c", -10)).isEqualTo(-7);
        assertThat(s.add("c", 0)).isEqualTo(-7);
        s.set("n", "41".getBytes(UTF_8));
        assertThat(s.add("n", 1)).isEqualTo(42);
    }

    @Test
    void addOnANonNumberFailsAndLeavesTheValue() {
        Store s = store();
        s.set("text", "hello".getBytes(UTF_8));
        assertThatThrownBy(() -> s.add("text", 1)).isInstanceOf(HcommException.class)
                .hasMessageContaining("text").hasMessageContaining("not a number");
        assertThat(s.tryGet("text")).isEqualTo("hello".getBytes(UTF_8));
        s.set("max", Long.toString(Long.MAX_VALUE).getBytes(UTF_8));
        assertThatThrownBy(() -> s.add("max", 1)).isInstanceOf(HcommException.class);
        assertThat(s.add("other", 5)).as("still usable").isEqualTo(5);
    }

    @Test
    void compareAndSet() {
        Store s = store();
        byte[] a = "a".getBytes(UTF_8);
        byte[] b = "b".getBytes(UTF_8);
        byte[] c = "c".getBytes(UTF_8);
        assertThat(s.compareAndSet("cas", null, a)).as("absent expected, key absent: set").isEqualTo(a);
        assertThat(s.compareAndSet("cas", null, b)).as("absent expected, key present: current").isEqualTo(a);
        assertThat(s.compareAndSet("cas", b, c)).as("mismatch: current").isEqualTo(a);
        assertThat(s.tryGet("cas")).isEqualTo(a);
        assertThat(s.compareAndSet("cas", a, c)).as("match: desired").isEqualTo(c);
        assertThat(s.tryGet("cas")).isEqualTo(c);
        assertThat(s.compareAndSet("nothing", a, b)).as("expected value, key absent").isNull();
        assertThat(s.tryGet("nothing")).isNull();
        assertThat(s.compareAndSet("cas", c, new byte[0])).isEmpty();
        assertThat(s.compareAndSet("cas", new byte[0], a)).isEqualTo(a);
    }

    @Test
    void deleteSaysWhetherTheKeyWasSet() {
        Store s = store();
        assertThat(s.delete("d")).isFalse();
        s.set("d", new byte[] {1});
        assertThat(s.delete("d")).isTrue();
        assertThat(s.tryGet("d")).isNull();
        assertThat(s.delete("d")).isFalse();
        assertThat(s.add("d", 4)).as("deleted counter restarts at 0").isEqualTo(4);
    }

    @Test
    void concurrentAddsFromManyClientsAreExact() throws Exception {
        int threads = 16;
        int adds = 200;
        List<Store> clients = new ArrayList<>();
        for (int i = 0; i < threads; i++) clients.add(store());
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Long>> fs = new ArrayList<>();
            for (Store c : clients) {
                fs.add(pool.submit(() -> {
                    long max = 0;
                    for (int j = 0; j < adds; j++) max = Math.max(max, c.add("total", 1));
                    return max;
                }));
            }
            long highest = 0;
            for (Future<Long> f : fs) highest = Math.max(highest, f.get(20, TimeUnit.SECONDS));
            assertThat(highest).isEqualTo((long) threads * adds);
            assertThat(store().tryGet("total")).isEqualTo(Long.toString((long) threads * adds).getBytes(UTF_8));
        } finally {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(5, TimeUnit.SECONDS)).isTrue();
        }
    }

    /** The rendezvous pattern: every rank publishes its key, then waits for everyone's. */
    @Test
    void everyRankAwaitsEveryRanksKey() throws Exception {
        int n = 32;
        List<Store> clients = new ArrayList<>();
        for (int i = 0; i < n; i++) clients.add(store());
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < n; i++) keys.add("addr/" + i);
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<byte[]>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Store c = clients.get(i);
                String mine = keys.get(i);
                String next = keys.get((i + 1) % n);
                fs.add(pool.submit(() -> {
                    c.set(mine, mine.getBytes(UTF_8));
                    c.await(keys, Duration.ofSeconds(15));
                    return c.get(next, Duration.ZERO);
                }));
            }
            for (int i = 0; i < n; i++) {
                assertThat(fs.get(i).get(20, TimeUnit.SECONDS)).isEqualTo(keys.get((i + 1) % n).getBytes(UTF_8));
            }
        } finally {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(5, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void concurrentCompareAndSetElectsOneWinner() throws Exception {
        int threads = 8;
        List<Store> clients = new ArrayList<>();
        for (int i = 0; i < threads; i++) clients.add(store());
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Boolean>> fs = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                byte[] me = new byte[] {(byte) i};
                Store c = clients.get(i);
                fs.add(pool.submit(() -> java.util.Arrays.equals(c.compareAndSet("leader", null, me), me)));
            }
            int winners = 0;
            for (Future<Boolean> f : fs) if (f.get(10, TimeUnit.SECONDS)) winners++;
            assertThat(winners).isEqualTo(1);
        } finally {
            pool.shutdownNow();
            assertThat(pool.awaitTermination(5, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void closedStoreRefusesCallsAndCloseIsIdempotent() {
        Store s = store();
        s.set("k", new byte[] {1});
        s.close();
        s.close();
        assertThatThrownBy(() -> s.tryGet("k")).isInstanceOf(HcommException.class).hasMessageContaining("closed");
    }
}
