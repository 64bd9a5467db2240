package io.hcomm4j.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.bootstrap.TcpStoreServer;
import io.hcomm4j.examples.ExamplesTest.Result;
import io.hcomm4j.examples.RankJobs.Outcome;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link KvCacheHandoff} as real processes: 1 decode and 2 prefill engines, each a JVM, on a store this test serves
 * (as {@code hcomm launch} does: {@code RANK}, {@code WORLD_SIZE}, {@code MASTER_ADDR}/{@code MASTER_PORT} and
 * {@code HCOMM_STORE_HOSTED=1}). Over TCP: every block of every request is checked byte for byte by the decode engine,
 * every rank prints OK. Over shared memory, with one prefill killed (SIGKILL) while a WRITE batch of its is under way:
 * the decode engine finishes with every block of every request of the other checked byte for byte (its blocks of 352
 * KiB to 13.46 MiB all through the shared mapping), reports the dead one's count and the bytes it checked of both. (One
 * job for both over shared memory: a job of three engine JVMs costs more than its hand-offs.)
 */
@Timeout(200)
class KvCacheHandoffTest {
    private static final int REQUESTS = 8;
    private static final Pattern DECODE = Pattern.compile("2 prefills, (\\d+) requests \\((\\d+) from the live prefills\\), (\\d+) blocks"
            + " of (.+) to (.+), ([\\d.]+) MB checked byte for byte via (shm|tcp); ([\\d.]+) requests/s, ([\\d.]+) GB/s;"
            + " hand-off latency p50 ([\\d.]+) ms, p99 ([\\d.]+) ms(?:; prefill (\\d+) killed after (\\d+) of (\\d+) requests \\((\\d+) checked\\))?");
    private static final Pattern PREFILL = Pattern.compile("(\\d+) requests, (\\d+) blocks, ([\\d.]+) MB written into kv-decode's pool via"
            + " (shm|tcp); ([\\d.]+) requests/s, ([\\d.]+) GB/s with the fill, WRITE batches ([\\d.]+) GB/s; all (\\d+) checked by the decode engine");

    /** Runs the three engines with {@code env} and {@code args}; returns their outcomes in rank order. */
    private static List<Outcome> job(Map<String, String> env, String... args) throws Exception {
        try (TcpStoreServer store = TcpStoreServer.start(new InetSocketAddress("127.0.0.1", 0), "examples-test-secret")) {
            List<ProcessBuilder> ranks = new ArrayList<>();
            for (int r = 0; r < 3; r++) {
                ProcessBuilder pb = new ProcessBuilder(RankJobs.javaCommand(KvCacheHandoff.class, args));
                Map<String, String> e = RankJobs.cleanEnvironment(pb);
                e.putAll(env);
                e.put("RANK", Integer.toString(r));
                e.put("WORLD_SIZE", "3");
                e.put("MASTER_ADDR", "127.0.0.1");
                e.put("MASTER_PORT", Integer.toString(store.address().getPort()));
                e.put("HCOMM_STORE_HOSTED", "1");
                e.put("HCOMM_SECRET", "examples-test-secret");
                ranks.add(pb);
            }
            long t0 = System.nanoTime();
            List<Outcome> out = RankJobs.run(ranks);
            System.out.printf("KvCacheHandoffTest %s %s: %.1f s%n", env, String.join(" ", args), (System.nanoTime() - t0) / 1e9);
            for (Outcome o : out) for (Result r : ExamplesTest.resultLines(o)) System.out.println("  " + r.role() + ": " + r.detail() + ": " + (r.ok() ? "OK" : "FAILED"));
            return out;
        }
    }

    /** The bytes of the first {@code requests} requests of prefill {@code p}: 4 blocks each. */
    private static long bytes(int p, int requests) {
        long bytes = 0;
        for (int r = 0; r < requests; r++) bytes += 4 * KvCacheHandoff.blockBytes(p, r);
        return bytes;
    }

    @Test
    void everyBlockOfEveryRequestIsCheckedByTheDecodeEngineOverTcp() throws Exception {
        String transport = "tcp";
        List<Outcome> outcomes = job(Map.of("HCOMM_TRANSPORT", "tcp"), "--requests", String.valueOf(REQUESTS));
        List<Result> results = ExamplesTest.passed("kv-cache", 3, outcomes);
        assertThat(results.get(0).role()).isEqualTo("decode");
        Matcher d = DECODE.matcher(results.get(0).detail());
        assertThat(d.matches()).as(results.get(0).detail()).isTrue();
        assertThat(Integer.parseInt(d.group(1))).isEqualTo(2 * REQUESTS);
        assertThat(Integer.parseInt(d.group(2))).isEqualTo(2 * REQUESTS);
        assertThat(Integer.parseInt(d.group(3))).isEqualTo(2 * REQUESTS * 4);
        assertThat(d.group(7)).isEqualTo(transport);
        assertThat(d.group(12)).as("no prefill died").isNull();
        long bytes = 0;
        for (int p = 0; p < 2; p++) {
            long mine = bytes(p, REQUESTS);
            bytes += mine;
            Result res = results.get(p + 1);
            assertThat(res.role()).isEqualTo("prefill " + p + " of 2");
            Matcher m = PREFILL.matcher(res.detail());
            assertThat(m.matches()).as(res.detail()).isTrue();
            assertThat(m.group(1)).isEqualTo(String.valueOf(REQUESTS));
            assertThat(m.group(3)).isEqualTo(Examples.fmt("%.1f", mine / 1e6));
            assertThat(m.group(4)).isEqualTo(transport);
            assertThat(m.group(8)).isEqualTo(String.valueOf(REQUESTS));
        }
        assertThat(d.group(6)).isEqualTo(Examples.fmt("%.1f", bytes / 1e6));
    }

    @Test
    void aPrefillKilledMidwayLeavesTheDecodeEngineServingTheOther() throws Exception {
        List<Outcome> outcomes = job(Map.of(), "--requests", String.valueOf(REQUESTS), "--kill-prefill", "1", "--kill-after", "3");
        Outcome killed = outcomes.get(2);
        assertThat(killed.exitCode()).as(killed.output()).isEqualTo(137);
        assertThat(killed.output()).contains("3 requests consumed, request 3 on its way: killing this process with SIGKILL");
        assertThat(ExamplesTest.resultLines(killed)).isEmpty();
        List<Result> results = new ArrayList<>();
        for (Outcome o : outcomes.subList(0, 2)) {
            assertThat(o.exitCode()).as(o.output()).isZero();
            List<Result> mine = ExamplesTest.resultLines(o);
            assertThat(mine).as(o.output()).hasSize(1);
            assertThat(mine.getFirst().ok()).as(o.output()).isTrue();
            results.add(mine.getFirst());
        }
        Matcher d = DECODE.matcher(results.get(0).detail());
        assertThat(d.matches()).as(results.get(0).detail()).isTrue();
        assertThat(Integer.parseInt(d.group(1))).isEqualTo(REQUESTS + 3);
        assertThat(Integer.parseInt(d.group(2))).isEqualTo(REQUESTS);
        // every block of prefill 0's requests and of the dead one's first 3, checked byte for byte, through the mapping
        assertThat(Integer.parseInt(d.group(3))).isEqualTo((REQUESTS + 3) * 4);
        assertThat(d.group(6)).isEqualTo(Examples.fmt("%.1f", (bytes(0, REQUESTS) + bytes(1, 3)) / 1e6));
        assertThat(d.group(7)).isEqualTo("shm");
        assertThat(d.group(12)).isEqualTo("1");
        assertThat(d.group(13)).isEqualTo("3");
        assertThat(d.group(14)).isEqualTo(String.valueOf(REQUESTS));
        assertThat(d.group(15)).isEqualTo("3");
        assertThat(results.get(1).role()).isEqualTo("prefill 0 of 2");
        Matcher p = PREFILL.matcher(results.get(1).detail());
        assertThat(p.matches()).as(results.get(1).detail()).isTrue();
        assertThat(p.group(1)).isEqualTo(String.valueOf(REQUESTS));
        assertThat(p.group(3)).isEqualTo(Examples.fmt("%.1f", bytes(0, REQUESTS) / 1e6));
        assertThat(p.group(4)).isEqualTo("shm");
        assertThat(p.group(8)).isEqualTo(String.valueOf(REQUESTS));
    }
}
