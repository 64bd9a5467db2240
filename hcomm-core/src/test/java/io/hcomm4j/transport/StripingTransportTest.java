package io.hcomm4j.transport;

import static io.hcomm4j.transport.ReconnectTransportTest.await;
import static io.hcomm4j.transport.ReconnectTransportTest.fill;
import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.security.Auth;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Several links per peer over loopback TCP (HCOMM_CHANNELS): large messages go in chunks over all of them
 * ({@link DataPump}, {@link Rails}), and every byte arrives once, in place, in both directions at once, with messages
 * of every size around the chunk unit in flight together; a rail that breaks, or stops delivering, in the middle of a
 * 64 MiB message costs nothing but its chunks sent again over the others, and it is opened again and used.
 */
class StripingTransportTest {
    private static final int LINKS = 3;

    static PeerTransport[] job(int channels) throws Exception {
        PeerTransport[] ts = new PeerTransport[2];
        InetSocketAddress[] book = new InetSocketAddress[2];
        var opts = new TransportOptions(Duration.ofSeconds(60), Duration.ofSeconds(10), Duration.ofNanos(50_000), 64 * 1024,
                64 << 20, Duration.ofSeconds(10), Duration.ofMillis(2500)).withRetry(5, Duration.ofMillis(100));
        for (int i = 0; i < 2; i++) {
            ts[i] = PeerTransport.open(i, 2, InetAddress.getLoopbackAddress(), Auth.of("transport-test-secret"), 42, opts);
            ts[i].enableRails(List.of(), channels);
            book[i] = ts[i].listenAddress();
        }
        for (PeerTransport t : ts) t.start(p -> book[p]);
        return ts;
    }

    /** Connects the pair and waits until every link to the peer is up on both sides. */
    static void allLinksUp(PeerTransport[] ts, int links) throws InterruptedException {
        await(ts[0].send(0, 1, 999_999, MemorySegment.ofArray(new byte[8])));
        await(ts[1].recv(0, 0, 999_999, MemorySegment.ofArray(new byte[8])));
        long deadline = System.nanoTime() + 20_000_000_000L;
        while ((ts[0].linkStats(1).size() < links || ts[1].linkStats(0).size() < links) && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertThat(ts[0].linkStats(1)).as("links of rank 0 to rank 1").hasSize(links);
        assertThat(ts[1].linkStats(0)).as("links of rank 1 to rank 0").hasSize(links);
    }

    @Test
    void largeMessagesGoOverEveryLinkAndArriveExactly() throws Exception {
        PeerTransport[] ts = job(LINKS);
        Random rnd = new Random(0x5EED);
        long chunk = Frame.CHUNK;
        long[] sizes = {1, 64 << 10, (64 << 10) + 1, chunk - 1, chunk, chunk + 1, 3 * chunk + 17, (9L << 20) + 5, 40L << 20};
        try (Arena arena = Arena.ofShared()) {
            allLinksUp(ts, LINKS);
            long rendezvous = 0, all = 0; // what each side sent: as chunks at least the rendezvous messages, at most all
            // each round refills round 0's buffers (fresh ones, 200 MB a round, cost page faults: tens of µs a page here)
            java.util.Map<String, MemorySegment[]> buffers = new java.util.HashMap<>();
            for (int round = 0; round < 3; round++) {
                // in flight at once, both ways: every size, in a shuffled order, two of them on one tag (order kept)
                List<long[]> plan = new ArrayList<>();
                for (int j = 0; j < sizes.length; j++) plan.add(new long[] {sizes[j], rnd.nextInt(3), j});
                java.util.Collections.shuffle(plan, rnd);
                List<MemorySegment[]> bufs = new ArrayList<>();
                List<Request<?>> reqs = new ArrayList<>();
                for (int i = 0; i < plan.size(); i++) {
                    long size = plan.get(i)[0];
                    int tag = (int) plan.get(i)[1];
                    for (int from = 0; from < 2; from++) {
                        MemorySegment[] pair = buffers.computeIfAbsent(plan.get(i)[2] + "/" + from,
                                k -> new MemorySegment[] {arena.allocate(size), arena.allocate(size)});
                        MemorySegment src = pair[0], dst = pair[1];
                        fill(src, round * 1000L + i * 10L + from);
                        dst.fill((byte) 0x5A);
                        bufs.add(new MemorySegment[] {src, dst});
                        reqs.add(ts[1 - from].recv(0, from, tag, dst));
                        reqs.add(ts[from].send(0, 1 - from, tag, src));
                        if (from == 0) {
                            all += size;
                            if (size > 64 << 10) rendezvous += size;
                        }
                    }
                }
                for (Request<?> r : reqs) await(r);
                for (Request<?> r : reqs) assertThat(r.isCompletedExceptionally()).as(r.describe()).isFalse();
                for (int i = 0; i < bufs.size(); i++) {
                    MemorySegment[] b = bufs.get(i);
                    assertThat(b[1].mismatch(b[0])).as("message %d of round %d (%d bytes)", i, round, b[0].byteSize()).isEqualTo(-1);
                }
            }
            for (int side = 0; side < 2; side++) {
                List<LinkStats> links = ts[side].linkStats(1 - side);
                long carried = 0;
                for (LinkStats l : links) {
                    assertThat(l.bytes()).as("chunk bytes on link %d of rank %d: %s", l.index(), side, links).isPositive();
                    carried += l.bytes();
                }
                assertThat(carried).as("rank %d: every rendezvous byte went as a chunk on some link, once", side)
                        .isBetween(rendezvous, all);
            }
            assertThat(ts[0].rails.failures.get() + ts[1].rails.failures.get()).isZero();
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }

    @Test
    void aRailThatBreaksOrGoesSilentLosesNothingAndComesBack() throws Exception {
        PeerTransport[] ts = job(LINKS);
        long size = 64L << 20;
        try (Arena arena = Arena.ofShared()) {
            allLinksUp(ts, LINKS);
            MemorySegment src = arena.allocate(size), dst = arena.allocate(size);
            for (int round = 0; round < 4; round++) {
                fill(src, round + 7);
                dst.fill((byte) 0);
                long failuresBefore = ts[0].rails.failures.get();
                var r = ts[1].recv(0, 0, round, dst);
                var s = ts[0].send(0, 1, round, src);
                // a few ms into the message, one rail breaks: by either side (RST), or its packets stop arriving (the
                // receiver reads nothing more from it: the sender finds a chunk unacknowledged for a second)
                Thread.sleep(3);
                int rail = 1 + round % 2;
                boolean hit = switch (round) {
                    case 0 -> ts[0].rails.drop(1, rail, Conduit.Drop.RESET);
                    case 1 -> ts[1].rails.drop(0, rail, Conduit.Drop.CLOSE);
                    default -> ts[1].rails.deafen(0, rail);
                };
                await(s);
                await(r);
                assertThat(s.isCompletedExceptionally()).isFalse();
                assertThat(r.isCompletedExceptionally()).isFalse();
                assertThat(dst.mismatch(src)).as("round %d", round).isEqualTo(-1);
                if (hit && round >= 2) {
                    assertThat(ts[0].rails.failures.get()).as("the silent rail was given up").isGreaterThan(failuresBefore);
                }
                // the lower rank opens it again within about a second; then it carries chunks again
                allLinksUp(ts, LINKS);
            }
            long[] carriedBefore = ts[0].linkStats(1).stream().mapToLong(LinkStats::bytes).toArray();
            fill(src, 99);
            var r = ts[1].recv(0, 0, 99, dst);
            await(ts[0].send(0, 1, 99, src));
            await(r);
            assertThat(dst.mismatch(src)).isEqualTo(-1);
            List<LinkStats> after = ts[0].linkStats(1);
            assertThat(after).hasSize(LINKS);
            for (int i = 0; i < LINKS; i++) {
                assertThat(after.get(i).bytes()).as("link %d carried the last message too: %s (before %s)", i, after,
                        java.util.Arrays.toString(carriedBefore)).isGreaterThan(i < carriedBefore.length ? carriedBefore[i] : 0);
            }
            assertThat(ts[0].failedRanks()).isEmpty();
            assertThat(ts[1].failedRanks()).isEmpty();
        } finally {
            for (PeerTransport t : ts) t.close();
        }
    }
}
