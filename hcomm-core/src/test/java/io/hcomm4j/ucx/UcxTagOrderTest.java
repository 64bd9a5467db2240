package io.hcomm4j.ucx;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What the UCX transport's frame road rests on: one sender's tag messages of one tag fill receives posted for that tag
 * in the order they were sent, with up to 32 sends in flight, sizes from 8 B to 64 KiB (eager and rendezvous inside
 * UCX), each receive posted again once read; 3000 messages over tcp and over posix,cma, every sequence number checked.
 */
class UcxTagOrderTest {
    @org.junit.jupiter.api.BeforeAll
    static void ucxInstalled() {
        org.junit.jupiter.api.Assumptions.assumeTrue(Ucp.available(), "UCX is not installed: apt-get install libucx0");
    }

    @Test
    void messagesOfOneTagFillReceivesInTheOrderTheyWereSent() {
        for (String tls : new String[] {"tcp", "posix,cma"}) {
            try (UcpContext c = UcpContext.open(Map.of("TLS", tls)); UcpWorker a = c.newWorker(); UcpWorker b = c.newWorker();
                 UcpEndpoint toB = a.connect(b.address(), false); UcpEndpoint toA = b.connect(a.address(), false); Arena mem = Arena.ofShared()) {
                UcpTags ta = a.tags(), tb = b.tags();
                int slots = 16, slot = 64 << 10;
                MemorySegment rx = mem.allocate((long) slots * slot), tx = mem.allocate(64L * slot);
                MemorySegment[] info = new MemorySegment[slots], params = new MemorySegment[slots];
                long[] req = new long[slots];
                long tag = (1L << 63) | 5;
                for (int i = 0; i < slots; i++) {
                    info[i] = mem.allocate(16, 8);
                    params[i] = UcpTags.receiveParams(mem, info[i]);
                    req[i] = tb.receive(rx.address() + (long) i * slot, slot, tag, params[i]);
                }
                java.util.Random rnd = new java.util.Random(1);
                int total = 3000, sent = 0, got = 0, head = 0;
                java.util.ArrayDeque<long[]> pend = new java.util.ArrayDeque<>();
                while (got < total) {
                    while (!pend.isEmpty() && (pend.peek()[0] == 0 || ta.status(pend.peek()[0]) != 1)) { long[] p = pend.poll(); if (p[0] != 0) ta.free(p[0]); }
                    if (sent < total && pend.size() < 32) {
                        int n = 8 + rnd.nextInt(rnd.nextBoolean() ? 64 : slot - 8);
                        long off = (long) (sent % 64) * slot;
                        tx.set(ValueLayout.JAVA_INT, off, sent);
                        long r = ta.send(toB, tx.address() + off, n, tag);
                        pend.add(new long[] {r});
                        sent++;
                    }
                    a.progress(); b.progress();
                    while (true) {
                        long r = req[head];
                        if (r != 0) {
                            int st = tb.testReceive(r, info[head]);
                            if (st == 1) break;
                            tb.free(r);
                            req[head] = 0;
                            if (st != 0) throw new AssertionError(tls + " status " + st);
                        }
                        int seq = rx.get(ValueLayout.JAVA_INT, (long) head * slot);
                        if (seq != got) throw new AssertionError(tls + ": slot " + head + " has message " + seq + ", expected " + got + " (len " + info[head].get(ValueLayout.JAVA_LONG, 8) + ")");
                        got++;
                        req[head] = tb.receive(rx.address() + (long) head * slot, slot, tag, params[head]);
                        head = (head + 1) % slots;
                    }
                }
                org.assertj.core.api.Assertions.assertThat(got).isEqualTo(total);
                for (int i = 0; i < slots; i++) if (req[i] != 0) { tb.cancel(req[i]); while (tb.status(req[i]) == 1) b.progress(); tb.free(req[i]); }
            }
        }
    }
}
