package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.testing.Ranks;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * One store that outlives its jobs ({@link StoreServer}, as a Spark driver serves it) and store scopes
 * ({@code HCOMM_STORE_SCOPE}): a job that died half-way through init leaves its keys behind, and the next attempt in
 * another scope on the same store starts clean; two jobs with the same ranks share a store at once.
 */
class StoreScopeTest {
    private static final String SECRET = "scope-test-secret-01";

    @Test
    void anAttemptAfterOneThatDiedInInitStartsCleanOnTheSameStore() throws Exception {
        try (StoreServer store = StoreServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), SECRET)) {
            // attempt 0: two of three ranks arrive (they count their generation and publish addresses), the third never does
            ExecutorService pool = Executors.newFixedThreadPool(2);
            try {
                CompletableFuture<?>[] dead = new CompletableFuture<?>[2];
                for (int r = 0; r < 2; r++) {
                    CommConfig c = config(store, "stage-7.0", r, 3).initTimeout(Duration.ofMillis(700)).build();
                    dead[r] = CompletableFuture.runAsync(() -> Hcomm.init(c).close(), pool);
                }
                for (CompletableFuture<?> f : dead) {
                    assertThatThrownBy(f::join).hasCauseInstanceOf(CommTimeoutException.class);
                }
            } finally {
                pool.shutdownNow();
            }
            // attempt 1 on the same store: every rank's first init in its scope, whatever attempt 0 left
            allReduceChecked(store, "stage-7.1", 3, 101);
        }
    }

    @Test
    void twoJobsWithTheSameRanksShareOneStoreAtOnce() throws Exception {
        try (StoreServer store = StoreServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), SECRET)) {
            CompletableFuture<Void> a = CompletableFuture.runAsync(() -> allReduceUnchecked(store, "job-a", 2, 1));
            CompletableFuture<Void> b = CompletableFuture.runAsync(() -> allReduceUnchecked(store, "job-b", 3, 2));
            CompletableFuture.allOf(a, b).get();
        }
    }

    @Test
    void scopeIsReadFromTheEnvironmentAndValidated() {
        assertThat(CommConfig.builderFrom(Map.of("HCOMM_STORE_SCOPE", "spark/app-1/stage-3.0"), k -> null).build().storeScope())
                .isEqualTo("spark/app-1/stage-3.0");
        assertThat(CommConfig.builder().build().storeScope()).isEmpty();
        for (String bad : new String[] {"/lead", "trail/", "a//b", "with space", "ünï", "x".repeat(201)}) {
            assertThatThrownBy(() -> CommConfig.builder().storeScope(bad).build())
                    .as(bad).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("HCOMM_STORE_SCOPE");
        }
        assertThatThrownBy(() -> CommConfig.builderFrom(Map.of("HCOMM_STORE_SCOPE", "a b"), k -> null).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'a b'");
    }

    @Test
    void storeServerNamesItsAddressAndFreesItsPort() throws Exception {
        assertThatThrownBy(() -> StoreServer.start(null, SECRET)).isInstanceOf(NullPointerException.class).hasMessage("bind");
        int port;
        try (StoreServer s = StoreServer.start(new InetSocketAddress("127.0.0.1", 0), null)) {
            port = s.address().getPort();
            assertThat(s.initMethod()).isEqualTo("tcp://127.0.0.1:" + port);
            assertThat(s.initMethod("::1")).isEqualTo("tcp://[::1]:" + port);
            assertThat(s.initMethod("node-1")).isEqualTo("tcp://node-1:" + port);
            assertThatThrownBy(() -> StoreServer.start(new InetSocketAddress("127.0.0.1", port), null))
                    .isInstanceOf(HcommException.class).hasMessageContaining("127.0.0.1:" + port);
        }
        try (ServerSocket again = new ServerSocket()) {
            again.setReuseAddress(true);
            again.bind(new InetSocketAddress("127.0.0.1", port));
        }
    }

    private static CommConfig.Builder config(StoreServer store, String scope, int rank, int n) {
        return CommConfig.builder().initMethod(store.initMethod()).storeHosted(true).storeScope(scope).secret(SECRET)
                .rank(rank).worldSize(n).timeout(Duration.ofSeconds(60)).initTimeout(Duration.ofSeconds(60));
    }

    private static void allReduceUnchecked(StoreServer store, String scope, int n, long seed) {
        try {
            allReduceChecked(store, scope, n, seed);
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    /** n ranks as threads on {@code store} in {@code scope} all-reduce seeded vectors; every rank checks every element. */
    private static void allReduceChecked(StoreServer store, String scope, int n, long seed) throws Exception {
        int count = 1000;
        long[] expected = new long[count];
        for (int r = 0; r < n; r++) {
            long[] mine = data(seed, r, count);
            for (int i = 0; i < count; i++) expected[i] += mine[i];
        }
        Consumer<Hcomm> body = h -> {
            long[] buf = data(seed, h.world().rank(), count);
            h.world().allReduce(buf, ReduceOp.SUM);
            assertThat(buf).as("rank %d of %s", h.world().rank(), scope).containsExactly(expected);
        };
        Ranks.runThreadsPerRank(n, Duration.ofSeconds(60), (rank, b) -> config(store, scope, rank, n), body);
    }

    private static long[] data(long seed, int rank, int count) {
        Random rnd = new Random(seed * 31 + rank);
        long[] a = new long[count];
        for (int i = 0; i < count; i++) a[i] = rnd.nextInt(1_000_000);
        return a;
    }
}
