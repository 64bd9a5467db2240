package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.Ranks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import javax.management.JMX;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.openmbean.TabularData;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The JMX bean of every communicator (issue 19), read through the platform MBean server as a JMX client would:
 * registered under {@code io.hcomm4j:type=Communicator,id=..,worldRank=..} for the world and a split, its counts,
 * percentiles, peers and the op in flight while a receive waits, the dump operation, and gone once the communicator
 * (or the session) is closed.
 */
class JmxTest {
    @TempDir
    Path dir;

    private static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();

    private static Set<ObjectName> beans(String filter) throws Exception {
        return SERVER.queryNames(new ObjectName("io.hcomm4j:type=Communicator," + filter), null);
    }

    @Test
    void everyCommunicatorHasABeanUntilItCloses() throws Exception {
        int n = 3;
        Set<ObjectName> before = beans("*"); // an earlier test's session this JVM still holds is not this test's business
        Ranks.runThreads(n, Duration.ofMinutes(2), h -> {
            try {
                rank(h, n, before);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        Set<ObjectName> after = new java.util.HashSet<>(beans("*"));
        after.removeAll(before);
        assertThat(after).as("every bean is gone once the sessions closed").isEmpty();
    }

    /** The one bean of this test that matches {@code filter} (an earlier test's leftover of the same name is not it). */
    private static ObjectName only(Set<ObjectName> before, String filter) throws Exception {
        Set<ObjectName> found = new java.util.HashSet<>(beans(filter + ",*"));
        found.removeAll(before);
        found.removeIf(o -> !o.getKeyProperty("id").equals("0") == filter.contains("id=0"));
        assertThat(found).as(filter).hasSize(1);
        return found.iterator().next();
    }

    private void rank(Hcomm h, int n, Set<ObjectName> before) throws Exception {
        try (Arena arena = Arena.ofShared()) {
            Communicator c = h.world();
            int me = c.rank();
            MemorySegment buf = arena.allocate(1024 * 8);
            for (int i = 0; i < 10; i++) c.allReduce(buf, buf, 1024, DataType.FLOAT64, ReduceOp.SUM);
            ObjectName name = only(before, "id=0,worldRank=" + me);
            CommunicatorMXBean w = JMX.newMXBeanProxy(SERVER, name, CommunicatorMXBean.class);
            assertThat(w.getId()).isEqualTo("0");
            assertThat(w.getRank()).isEqualTo(me);
            assertThat(w.getWorldRank()).isEqualTo(me);
            assertThat(w.getSize()).isEqualTo(n);
            assertThat(w.getHealth()).isEqualTo("READY");
            assertThat(w.getHealthReason()).isEmpty();
            assertThat(w.getFailedRanks()).isEmpty();
            assertThat(w.getCollectivesCalled()).isEqualTo(10);
            assertThat(w.getCalls()).containsEntry("allReduce", 10L);
            assertThat(w.getBytes()).containsEntry("allReduce", 10L * 8192);
            assertThat(w.getFailures()).containsEntry("allReduce", 0L);
            double p50 = w.getP50Micros().get("allReduce");
            double p99 = w.getP99Micros().get("allReduce");
            double max = w.getMaxMicros().get("allReduce");
            assertThat(p50).isPositive().isLessThanOrEqualTo(p99);
            assertThat(p99).isLessThanOrEqualTo(max);
            assertThat(w.getMeanMicros().get("allReduce")).isPositive().isLessThanOrEqualTo(max);
            // what a generic JMX client sees: an open type, not our classes
            assertThat(SERVER.getAttribute(name, "Calls")).isInstanceOf(TabularData.class);
            assertThat(w.getPeers()).hasSize(n - 1).allSatisfy(p -> assertThat(p).matches("rank \\d \\(world \\d\\): (shm|tcp|none)"));
            assertThat(w.dumpTrace(dir.resolve("jmx-" + me + ".json").toString())).endsWith("jmx-" + me + ".json");
            assertThat(Files.readString(dir.resolve("jmx-" + me + ".json"))).contains("\"schema\": \"hcomm-trace/1\"");

            // an op in flight: rank 1 waits for a message rank 0 sends once it saw the wait in rank 1's bean
            MemorySegment word = arena.allocate(8);
            if (me == 1) {
                c.recv(word, 0, 3);
            } else if (me == 0) {
                CommunicatorMXBean one = JMX.newMXBeanProxy(SERVER, only(before, "id=0,worldRank=1"), CommunicatorMXBean.class);
                Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> one.getOldestOpInFlightMillis() >= 200);
                assertThat(one.getOpsInFlight()).singleElement().asString().startsWith("recv from rank 0 (tag 3, 8 B) started for ");
                c.send(word, 1, 3);
            }
            c.barrier();
            assertThat(w.getOpsInFlight()).isEmpty();

            try (Communicator odd = c.split(me % 2, me)) {
                CommunicatorMXBean s = JMX.newMXBeanProxy(SERVER, only(before, "worldRank=" + me), CommunicatorMXBean.class);
                assertThat(s.getSize()).isEqualTo(me % 2 == 0 ? 2 : 1);
                assertThat(s.getRank()).isEqualTo(me / 2);
                odd.barrier();
                assertThat(s.getCalls()).containsEntry("barrier", 1L);
            }
            Set<ObjectName> left = new java.util.HashSet<>(beans("worldRank=" + me + ",*"));
            left.removeAll(before);
            assertThat(left).as("the split's bean is gone once it closed").containsExactly(name);
        }
    }
}
