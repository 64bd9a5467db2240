package io.hcomm4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.testing.NetLinks;
import io.hcomm4j.testing.Ranks;
import io.hcomm4j.testing.StripeWorker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two links of unequal speed between two "hosts" ({@link NetLinks}: network namespaces joined by veth pairs shaped to 2
 * and 1 Gbit/s), one rank on each with {@code HCOMM_SOCKET_IFNAME=nic0,nic1}, exchanging 16 MiB messages in a loop
 * ({@link StripeWorker}: every long checked) while the test changes the links under it:
 * <ol>
 *   <li>both links up: each carries chunks;</li>
 *   <li>the 2 Gbit/s link drops to 0.5 Gbit/s: the loop goes on, both keep carrying;</li>
 *   <li>the second link goes down: its chunks in flight go again over the first (within the stall time of a second),
 *       the loop goes on with no rank failed;</li>
 *   <li>it comes back up: the rail is opened again and carries chunks again.</li>
 * </ol>
 * A second test takes the first link, the primary's, down: the primary link comes back over the second, and when the
 * first is up again a stand-in rail carries chunks over it.
 * The throughput of each phase is printed (docs/performance.md has a run of it); what is asserted is that nothing was
 * lost (the workers check every long and exit 0) and which links carried bytes when. Skipped, with the reason, where
 * network namespaces or {@code tc} are missing.
 */
@Tag("serial")
class NetnsStripingTest {
    private static final Pattern ITER = Pattern.compile("ITER (\\d+) at=(\\d+) us=(\\d+) links=(\\S*) primary=(\\S*) unsent=(\\S*)");
    private static final long BYTES = 16L << 20;

    @BeforeAll
    static void needNetworkNamespaces() {
        Optional<String> why = NetLinks.unavailable();
        Assumptions.assumeTrue(why.isEmpty(), () -> "network namespace tests skipped: " + why.orElseThrow());
    }

    /** One exchange: its links' chunk bytes so far, and the bound on each link's unsent socket bytes ({@code Hcomm.Link}). */
    private record Iter(int i, long at, long us, Map<Integer, Long> links, String primary, Map<Integer, Long> unsent) {
    }

    @Test
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void stripesFollowTheLinksThroughASlowdownAFailureAndARecovery() throws Exception {
        try (NetLinks nets = NetLinks.create("2gbit", "1gbit")) {
            Path stop = Files.createTempDirectory("hcomm-stripe").resolve("stop");
            try (Ranks.Job job = start(nets, stop, 29000, Map.of())) {
                long[] marks = new long[5];
                marks[0] = awaitIterations(job, 0, 10);
                Thread.sleep(1_000);
                marks[1] = System.currentTimeMillis();
                nets.rate(0, "500mbit");
                Thread.sleep(2_000);
                marks[2] = System.currentTimeMillis();
                nets.link(1, false);
                Thread.sleep(2_500);
                marks[3] = System.currentTimeMillis();
                nets.link(1, true);
                Thread.sleep(3_000);
                marks[4] = System.currentTimeMillis();
                awaitIterations(job, marks[4], 5);
                Files.writeString(stop, "stop");
                List<Ranks.Outcome> outcomes = job.await(Duration.ofMinutes(2));
                for (Ranks.Outcome o : outcomes) {
                    assertThat(o.exitCode()).as("rank %d exit; output:\n%s", o.rank(), o.output()).isZero();
                    assertThat(o.output()).contains("OK ");
                }
                List<Iter> iters = parse(outcomes.get(0).output());
                String[] phase = {"2 + 1 Gbit/s", "0.5 + 1 Gbit/s", "0.5 Gbit/s, nic1 down", "0.5 + 1 Gbit/s, nic1 back"};
                StringBuilder report = new StringBuilder("NetnsStripingTest, 16 MiB each way per exchange:\n");
                List<String> emptyPhases = new ArrayList<>();
                for (int p = 0; p < 4; p++) {
                    long from = marks[p], to = marks[p + 1];
                    List<Iter> in = iters.stream().filter(it -> it.at() > from && it.at() <= to).toList();
                    if (in.isEmpty()) {
                        emptyPhases.add(phase[p]);
                        report.append(String.format("  %-28s no exchange ended in its %d ms%n", phase[p], to - from));
                        continue;
                    }
                    long us = in.stream().mapToLong(Iter::us).sum();
                    report.append(String.format("  %-28s %3d exchanges, %.3f GB/s each way; links at its end %s%n", phase[p], in.size(),
                            in.size() * (double) BYTES / us / 1e3, in.getLast().links()));
                    StringBuilder timeline = new StringBuilder("    ms after the change: GB/s");
                    for (Iter it : in) timeline.append(String.format(" %d:%.3f", it.at() - from, (double) BYTES / it.us() / 1e3));
                    report.append(timeline).append('\n');
                }
                System.out.print(report);
                assertThat(emptyPhases).as("phases in which no exchange ended; every exchange (ms since epoch, us):\n%s",
                        iters.stream().map(it -> it.at() + ":" + it.us()).toList()).isEmpty();
                // while both were up, both carried chunks; after nic1 went down its rail was gone; once back, it carried again
                Iter beforeSlow = last(iters, marks[1]);
                assertThat(beforeSlow.links()).as("links before the slowdown").containsKeys(0, 1);
                // the exchanges started before the rails were up, all queued on nic0 at first: no latency probe ran then
                // (it would have measured that queue), so the primary link stayed on nic0 and no stand-in rail was opened
                assertThat(beforeSlow.primary()).as("primary route").startsWith(nets.address(0, 0) + ":");
                assertThat(beforeSlow.links()).as("links before the slowdown").doesNotContainKey(2);
                assertThat(beforeSlow.links().get(1)).as("chunk bytes on nic1").isPositive();
                // with their rates measured, both sockets hold at most about 1 ms of their link unsent (not loopback)
                assertThat(beforeSlow.unsent()).as("unsent bounds before the slowdown").containsOnlyKeys(0, 1)
                        .allSatisfy((link, bound) -> assertThat(bound).as("link %d", link).isBetween(256L << 10, 4L << 20));
                Iter slow = last(iters, marks[2]);
                assertThat(slow.links().getOrDefault(1, 0L)).as("nic1 carried more after nic0 slowed").isGreaterThan(beforeSlow.links().get(1));
                Iter down = last(iters, marks[3]);
                assertThat(down.links()).as("links while nic1 is down").doesNotContainKey(1);
                Iter back = iters.getLast();
                assertThat(back.links()).as("links after nic1 came back").containsKey(1);
                assertThat(back.links().get(1)).as("chunk bytes on nic1 after it came back").isPositive();
            }
        }
    }

    @Test
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void thePrimaryLinkComesBackOverTheOtherInterfaceWhenItsOwnGoesDown() throws Exception {
        try (NetLinks nets = NetLinks.create("2gbit", "1gbit")) {
            Path stop = Files.createTempDirectory("hcomm-stripe").resolve("stop");
            // a short heartbeat timeout: the silent primary link is replaced after 1 s (it must be back within 2 s)
            try (Ranks.Job job = start(nets, stop, 29500, Map.of("HCOMM_HEARTBEAT_TIMEOUT", "2s"))) {
                awaitIterations(job, 0, 10);
                long down = System.currentTimeMillis();
                nets.link(0, false);
                // exchanges go on over nic1 alone: the primary link reconnected over it
                long moved = awaitIterations(job, down + 2_500, 5);
                nets.link(0, true);
                // nic0 back: the lower rank opens a stand-in rail there (index 2: after rail 1 on nic1), which carries chunks
                long back = System.currentTimeMillis();
                long standIn = awaitStandIn(job, back);
                awaitIterations(job, standIn, 3);
                Files.writeString(stop, "stop");
                List<Ranks.Outcome> outcomes = job.await(Duration.ofMinutes(2));
                for (Ranks.Outcome o : outcomes) {
                    assertThat(o.exitCode()).as("rank %d exit; output:\n%s", o.rank(), o.output()).isZero();
                    assertThat(o.output()).contains("OK ").doesNotContain("PeerFailedException");
                }
                assertThat(outcomes.get(0).output() + outcomes.get(1).output()).contains("re-established the connection to rank");
                List<Iter> iters = parse(outcomes.get(0).output());
                long during = iters.stream().filter(it -> it.at() > down + 2_500 && it.at() <= moved).count();
                long pause = 0, prev = down;
                for (Iter it : iters) {
                    if (it.at() <= down) continue;
                    pause = Math.max(pause, it.at() - prev);
                    prev = it.at();
                }
                System.out.printf("NetnsStripingTest primary: nic0 down; the longest pause between exchanges after it %d ms; %d exchanges "
                        + "with nic0 down; nic0 carried chunks again %d ms after it came back%n", pause, during, standIn - back);
                assertThat(during).as("exchanges while nic0 was down").isGreaterThanOrEqualTo(5);
                Iter last = iters.getLast();
                assertThat(last.links()).as("links at the end (0 and 1 on nic1, 2 the stand-in on nic0)").containsKeys(0, 1, 2);
                assertThat(last.links().get(2)).as("chunk bytes on the stand-in rail over nic0").isPositive();
            }
        }
    }

    @Test
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void smallMessagesMoveToTheLinkThatAnswersSoonest() throws Exception {
        // nic0, the first interface (the primary link's), passes 1600 bytes at once and then 8 Mbit/s: a 4 KiB message
        // takes milliseconds there, against a tenth of one over nic1
        try (NetLinks nets = NetLinks.create("8mbit/1600", "1gbit")) {
            Path stop = Files.createTempDirectory("hcomm-stripe").resolve("stop");
            String nic1 = nets.address(0, 1);
            try (Ranks.Job job = start(nets, stop, 30000, Map.of(), 4096)) {
                long start = System.currentTimeMillis();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                Iter moved = null;
                while (moved == null) {
                    for (Iter it : parse(Files.readString(job.logs.get(0)))) {
                        if (it.primary().startsWith(nic1 + ":") && it.links().containsKey(2)) {
                            moved = it;
                            break;
                        }
                    }
                    if (System.nanoTime() > deadline) throw new AssertionError("the primary link did not move to nic1 within 60 s:\n" + job.outputs());
                    for (Process p : job.processes) if (!p.isAlive()) throw new AssertionError("a rank exited early:\n" + job.outputs());
                    Thread.sleep(50);
                }
                awaitIterations(job, moved.at(), 3);
                Files.writeString(stop, "stop");
                List<Ranks.Outcome> outcomes = job.await(Duration.ofMinutes(2));
                for (Ranks.Outcome o : outcomes) {
                    assertThat(o.exitCode()).as("rank %d exit; output:\n%s", o.rank(), o.output()).isZero();
                    assertThat(o.output()).contains("OK ").doesNotContain("PeerFailedException");
                }
                assertThat(outcomes.get(0).output()).contains("small messages to rank 1 go over " + nic1);
                List<Iter> iters = parse(outcomes.get(0).output());
                Iter first = iters.getFirst(), last = iters.getLast();
                System.out.printf("NetnsStripingTest latency: 4 KiB exchange %d us at iteration %d (primary %s), %d us at iteration %d "
                        + "(primary %s); moved %d ms after the start%n", first.us(), first.i(), first.primary(), last.us(), last.i(),
                        last.primary(), moved.at() - start);
                // the exchanges after the move went over nic1, and nic0 still has a link (the stand-in rail)
                for (Iter it : iters) if (it.at() > moved.at()) assertThat(it.primary()).as("primary route after the move").startsWith(nic1 + ":");
                assertThat(last.links()).as("links at the end (1 on nic1, 2 the stand-in on nic0)").containsKeys(0, 1, 2);
            }
        }
    }

    /**
     * The two ranks, one per namespace, over both NICs ({@link StripeWorker} until {@code stop} exists); the store on
     * rank 0 at nic0, its port from {@code portBase} and the pid; {@code extraEnv} on top.
     */
    private static Ranks.Job start(NetLinks nets, Path stop, int portBase, Map<String, String> extraEnv) throws Exception {
        return start(nets, stop, portBase, extraEnv, BYTES);
    }

    private static Ranks.Job start(NetLinks nets, Path stop, int portBase, Map<String, String> extraEnv, long bytes) throws Exception {
        Map<String, String> env = new java.util.HashMap<>(Map.of("MASTER_ADDR", nets.address(0, 0),
                "MASTER_PORT", String.valueOf(portBase + (int) (ProcessHandle.current().pid() % 400)),
                "HCOMM_SOCKET_IFNAME", "nic0,nic1", "HCOMM_TIMEOUT", "120s", "HCOMM_INIT_TIMEOUT", "60s"));
        env.putAll(extraEnv);
        return Ranks.start(2, StripeWorker.class, env, nets::exec, stop.toString(), String.valueOf(bytes));
    }

    /** Waits until rank 0 printed {@code n} ITER lines stamped after {@code afterMs}; returns the time. */
    private static long awaitIterations(Ranks.Job job, long afterMs, int n) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (true) {
            long count = parse(Files.readString(job.logs.get(0))).stream().filter(it -> it.at() > afterMs).count();
            if (count >= n) return System.currentTimeMillis();
            if (System.nanoTime() > deadline) throw new AssertionError("fewer than " + n + " exchanges:\n" + job.outputs());
            for (Process p : job.processes) if (!p.isAlive()) throw new AssertionError("a rank exited early:\n" + job.outputs());
            Thread.sleep(50);
        }
    }

    /** Waits until rank 0's links to rank 1 include the stand-in rail (index 2) with chunk bytes, after {@code afterMs}. */
    private static long awaitStandIn(Ranks.Job job, long afterMs) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            for (Iter it : parse(Files.readString(job.logs.get(0)))) {
                if (it.at() > afterMs && it.links().getOrDefault(2, 0L) > 0) return it.at();
            }
            if (System.nanoTime() > deadline) throw new AssertionError("nic0 not used again within 60 s:\n" + job.outputs());
            for (Process p : job.processes) if (!p.isAlive()) throw new AssertionError("a rank exited early:\n" + job.outputs());
            Thread.sleep(50);
        }
    }

    private static Iter last(List<Iter> iters, long beforeMs) {
        Iter last = null;
        for (Iter it : iters) if (it.at() <= beforeMs) last = it;
        assertThat(last).as("an exchange before %d", beforeMs).isNotNull();
        return last;
    }

    private static List<Iter> parse(String log) {
        List<Iter> out = new ArrayList<>();
        Matcher m = ITER.matcher(log);
        while (m.find()) {
            out.add(new Iter(Integer.parseInt(m.group(1)), Long.parseLong(m.group(2)), Long.parseLong(m.group(3)),
                    perLink(m.group(4)), m.group(5), perLink(m.group(6))));
        }
        return out;
    }

    /** {@code index:value,...} as a map. */
    private static Map<Integer, Long> perLink(String list) {
        Map<Integer, Long> out = new java.util.TreeMap<>();
        for (String l : list.split(",")) {
            if (l.isEmpty()) continue;
            String[] kv = l.split(":");
            out.put(Integer.parseInt(kv[0]), Long.parseLong(kv[1]));
        }
        return out;
    }
}
