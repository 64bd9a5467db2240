package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.HierWorker;
import io.hcomm4j.testing.NetNamespaces;
import io.hcomm4j.testing.Ranks;
import io.hcomm4j.testing.StoreServerMain;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Ranks on several "hosts" of this machine: each network namespace is a host (its own network, so its own host
 * identity), joined to the others by veth pairs on a bridge in a private 10.77.x.0/24 ({@link NetNamespaces}); a store
 * process in rank 0's namespace serves the job's store. Asserts that ranks in different namespaces get different host ids and
 * talk over TCP, ranks of one namespace share a host id and talk over shared memory, the topology says so, and the
 * two-level collectives (chosen by the cost model, then forced) give every element right on every rank. Skipped, with
 * the reason, where network namespaces cannot be made (not root, no {@code ip}, a container without CAP_SYS_ADMIN).
 */
class NetnsHierarchyTest {
    private static final Duration JOB_TIMEOUT = Duration.ofMinutes(4);

    @BeforeAll
    static void needNetworkNamespaces() {
        Optional<String> why = NetNamespaces.unavailable();
        Assumptions.assumeTrue(why.isEmpty(), () -> "network namespace tests skipped: " + why.orElseThrow());
    }

    /** Two namespaces of two ranks each (ranks 0, 1 | 2, 3). */
    @Test
    @Timeout(value = 6, unit = TimeUnit.MINUTES)
    void twoNamespacesOfTwoRanks() throws Exception {
        runJob(new int[] {0, 0, 1, 1}, 2, true);
    }

    /**
     * Three namespaces, 2 + 1 + 1, the pair split by rank (ranks 0, 3 | 1 | 2): one channel, ranks interleaved. Here the
     * model keeps all-reduce flat (recursive doubling over 3 hosts needs two steps more than over 4 ranks), so the first
     * session runs the flat algorithms across namespaces and the second the two-level ones.
     */
    @Test
    @Timeout(value = 6, unit = TimeUnit.MINUTES)
    void threeNamespacesTwoOneOne() throws Exception {
        runJob(new int[] {0, 1, 2, 0}, 3, false);
    }

    /** Runs {@link HierWorker} with rank r in namespace {@code nsOf[r]}; checks ids, topology, transports and results. */
    private static void runJob(int[] nsOf, int namespaces, boolean modelPicksTwoLevels) throws Exception {
        int n = nsOf.length;
        List<Ranks.Outcome> out;
        NetNamespaces nets = NetNamespaces.create(namespaces);
        try (nets) {
            // the store in a process of its own in rank 0's namespace (a rank 0 that served it would close it with its
            // first session, and the test's JVM cannot listen in a namespace): the only way in from every namespace
            String addr = nets.address(nsOf[0]);
            Path storeLog = Files.createTempFile("hcomm-netns-store", ".log");
            List<String> cmd = new ArrayList<>(nets.exec(nsOf[0]));
            cmd.addAll(Ranks.javaCommand(StoreServerMain.class, addr, "29500", "test-job-secret-0001"));
            Process store = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(storeLog.toFile()).start();
            try {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (!Files.readString(storeLog).contains("ready")) {
                    if (!store.isAlive() || System.nanoTime() > deadline) {
                        throw new AssertionError("the store did not start in " + nets.name(nsOf[0]) + ":\n" + Files.readString(storeLog));
                    }
                    Thread.sleep(20);
                }
                Map<String, String> env = new HashMap<>();
                env.put("MASTER_ADDR", addr);
                env.put("MASTER_PORT", "29500");
                env.put("HCOMM_STORE_HOSTED", "1");
                env.put("HCOMM_INIT_TIMEOUT", "60s");
                try {
                    out = Ranks.run(n, HierWorker.class, env, r -> nets.exec(nsOf[r]), JOB_TIMEOUT, "31337");
                } catch (AssertionError e) {
                    throw new AssertionError(e.getMessage() + "\nnamespaces:\n" + nets.describe(), e);
                }
            } finally {
                store.getOutputStream().close(); // ends it
                if (!store.waitFor(10, TimeUnit.SECONDS)) store.destroyForcibly();
                Files.deleteIfExists(storeLog);
            }
        }
        assertThat(nets.leftovers()).as("namespaces and links left behind").isEmpty();
        for (Ranks.Outcome o : out) System.out.print("--- rank " + o.rank() + " (namespace " + nsOf[o.rank()] + ")\n" + o.output());

        String[] hostId = new String[n];
        int[] host = new int[n];
        Pattern idLine = Pattern.compile("rank (\\d+) hostid (\\S+)");
        Pattern topoLine = Pattern.compile("rank (\\d+) topology host (\\d+) of (\\d+), local rank (\\d+) of (\\d+)");
        Pattern transport = Pattern.compile("rank (\\d+) transport to (\\d+): (\\w+)");
        for (Ranks.Outcome o : out) {
            int r = o.rank();
            Matcher m = idLine.matcher(o.output());
            assertThat(m.find()).as("rank %d printed its host id:\n%s", r, o.output()).isTrue();
            hostId[r] = m.group(2);
            Matcher t = topoLine.matcher(o.output());
            assertThat(t.find()).as("rank %d printed its topology", r).isTrue();
            host[r] = Integer.parseInt(t.group(2));
            assertThat(Integer.parseInt(t.group(3))).as("hosts seen by rank %d", r).isEqualTo(namespaces);
            int local = 0;
            int localSize = 0;
            for (int q = 0; q < n; q++) {
                if (nsOf[q] == nsOf[r]) {
                    localSize++;
                    if (q < r) local++;
                }
            }
            assertThat(Integer.parseInt(t.group(4))).as("local rank of %d", r).isEqualTo(local);
            assertThat(Integer.parseInt(t.group(5))).as("local size of %d", r).isEqualTo(localSize);
            Matcher x = transport.matcher(o.output());
            int seen = 0;
            while (x.find()) {
                int p = Integer.parseInt(x.group(2));
                assertThat(x.group(3)).as("transport from rank %d (namespace %d) to rank %d (namespace %d)", r, nsOf[r], p, nsOf[p])
                        .isEqualTo(nsOf[p] == nsOf[r] ? "shm" : "tcp");
                seen++;
            }
            assertThat(seen).as("rank %d printed its transports", r).isEqualTo(n - 1);
            if (modelPicksTwoLevels) assertThat(o.output()).contains("rank " + r + " model allreduce 4K HIERARCHICAL 1M HIERARCHICAL");
            assertThat(o.output()).contains("rank " + r + " PASS auto").contains("rank " + r + " PASS forced");
        }
        for (int a = 0; a < n; a++) {
            for (int b = 0; b < n; b++) {
                boolean same = nsOf[a] == nsOf[b];
                assertThat(hostId[a].equals(hostId[b])).as("host ids of ranks %d and %d (namespaces %d, %d)", a, b, nsOf[a], nsOf[b])
                        .isEqualTo(same);
                assertThat(host[a] == host[b]).as("topology hosts of ranks %d and %d", a, b).isEqualTo(same);
            }
        }
    }
}
