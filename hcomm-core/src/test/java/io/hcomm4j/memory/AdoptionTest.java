package io.hcomm4j.memory;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link MemoryPool#adopted}: the caller's large off-heap buffers move into shared memory at their second use, in
 * place and with their contents; the view and the caller's segment share every whole page, {@link MemoryPool#syncAdopted}
 * carries the partial end pages; what must not be remapped (heap, global scope, small, file mappings) never is, and a
 * closed arena's buffer is dropped. Every byte compared; a peer's view of the file is a real second mapping of it.
 */
class AdoptionTest {
    private static final long SEED = 2026_12_03L;
    private ShmDir dir;
    private MemoryPool pool;

    @BeforeEach
    void setUp() {
        dir = new ShmDir();
        pool = MemoryPool.open(new MemoryPool.Options(dir.path, 1L << 30, false, true));
    }

    @AfterEach
    void tearDown() throws IOException {
        pool.close();
        dir.close();
    }

    private static void fill(MemorySegment s, long seed) {
        Random r = new Random(seed);
        for (long i = 0; i + 8 <= s.byteSize(); i += 8) s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        for (long i = s.byteSize() & -8L; i < s.byteSize(); i++) s.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
    }

    private static void assertSameBytes(MemorySegment a, MemorySegment b, String what) {
        long at = a.mismatch(b);
        assertThat(at).as("%s: first differing byte", what).isEqualTo(-1);
    }

    /** The file of an adopted view, mapped a second time as a peer would. */
    private MemorySegment peerMapping(Arena arena, MemorySegment view) throws IOException {
        long[] loc = new long[2];
        assertThat(pool.locate(view, view.byteSize(), loc)).as("the view is registered memory").isTrue();
        String name = SharedFiles.ownPrefix() + loc[0];
        return SharedFiles.mapPeerFile(dir.path, name, arena).asSlice(loc[1], view.byteSize());
    }

    @Test
    void secondUseAdoptsInPlaceAndKeepsTheContents() throws IOException {
        long bytes = (3L << 20) + 12_345; // ragged end
        try (Arena user = Arena.ofConfined(); Arena peer = Arena.ofConfined()) {
            MemorySegment whole = user.allocate(bytes + 100, 1);
            MemorySegment seg = whole.asSlice(37, bytes); // starts mid-page
            fill(seg, SEED);
            MemorySegment before = Arena.ofAuto().allocate(bytes);
            MemorySegment.copy(seg, 0, before, 0, bytes);

            assertThat(pool.adopted(seg, bytes)).as("first use").isNull();
            MemorySegment view = pool.adopted(seg, bytes);
            assertThat(view).as("second use").isNotNull();
            assertThat(view.byteSize()).isEqualTo(bytes);
            assertThat(pool.stats().adoptedBuffers()).isEqualTo(1);
            assertThat(pool.adopted(seg, bytes)).as("third use: the same view").isSameAs(view);
            assertSameBytes(seg, before, "the caller's bytes after adoption");
            pool.syncAdopted(seg, view, bytes, true);
            assertSameBytes(view, before, "the view after syncing the ends in");

            // whole pages are shared both ways; a peer's own mapping of the file sees the same
            MemorySegment other = peerMapping(peer, view);
            fill(seg, SEED + 1);
            pool.syncAdopted(seg, view, bytes, true);
            assertSameBytes(view, seg, "caller's new bytes, seen in the view");
            assertSameBytes(other, seg, "caller's new bytes, seen in a peer's mapping");
            fill(other, SEED + 2); // a peer writes a result into the whole buffer
            pool.syncAdopted(seg, view, bytes, false);
            assertSameBytes(seg, other, "a peer's bytes, seen by the caller after syncing the ends out");
            // the bytes of the allocation around the segment were never touched
            assertThat(whole.asSlice(0, 37).mismatch(MemorySegment.ofArray(new byte[37]))).isEqualTo(-1);
        }
    }

    @Test
    void aSliceOfAnAdoptedBufferUsesItsView() {
        long bytes = 4L << 20;
        try (Arena user = Arena.ofShared()) {
            MemorySegment seg = user.allocate(bytes, 64);
            fill(seg, SEED);
            pool.adopted(seg, bytes);
            MemorySegment view = pool.adopted(seg, bytes);
            assertThat(view).isNotNull();
            MemorySegment part = seg.asSlice(1_000_003, 2L << 20);
            MemorySegment partView = pool.adopted(part, part.byteSize());
            assertThat(partView).as("a slice inside an adopted buffer, at once").isNotNull();
            assertThat(partView.address() - view.address()).isEqualTo(1_000_003);
            pool.syncAdopted(part, partView, part.byteSize(), true);
            assertSameBytes(partView, part, "slice");
            assertThat(pool.stats().adoptedBuffers()).isEqualTo(1);
        }
    }

    @Test
    void neverAdoptsWhatMustNotMove() throws IOException {
        long bytes = 3L << 20;
        MemorySegment heap = MemorySegment.ofArray(new byte[(int) bytes]);
        MemorySegment small;
        try (Arena user = Arena.ofConfined()) {
            small = user.allocate(Adoptions.MIN_BYTES - 1);
            MemorySegment global = MemorySegment.ofAddress(user.allocate(bytes).address()).reinterpret(bytes);
            Path file = dir.path.resolve("not-ours");
            MemorySegment mapped;
            MemorySegment wrapped;
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                mapped = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes, user);
            }
            fill(mapped, SEED);
            // a file mapping made to look like plain native memory of an arena: /proc/self/maps tells
            wrapped = MemorySegment.ofAddress(mapped.address()).reinterpret(bytes, user, null);
            for (int use = 0; use < 3; use++) {
                assertThat(pool.adopted(heap, bytes)).as("heap").isNull();
                assertThat(pool.adopted(small, small.byteSize())).as("small").isNull();
                assertThat(pool.adopted(global, bytes)).as("global scope").isNull();
                assertThat(pool.adopted(mapped, bytes)).as("file mapping").isNull();
                assertThat(pool.adopted(wrapped, bytes)).as("file mapping in an arena's segment").isNull();
            }
            assertThat(pool.stats().adoptedBuffers()).isZero();
            // the file still holds what was written through the mapping
            fill(mapped, SEED + 5);
            MemorySegment want = Arena.ofAuto().allocate(bytes);
            MemorySegment.copy(mapped, 0, want, 0, bytes);
            assertSameBytes(MemorySegment.ofArray(Files.readAllBytes(file)), want, "the file under the mapping");
        }
    }

    @Test
    void aClosedArenasBufferIsDroppedAndItsFileRemoved() {
        long bytes = 2L << 20;
        Arena user = Arena.ofShared();
        MemorySegment seg = user.allocate(bytes, 16);
        fill(seg, SEED);
        pool.adopted(seg, bytes);
        assertThat(pool.adopted(seg, bytes)).isNotNull();
        assertThat(dir.list()).hasSize(1);
        user.close();
        try (Arena next = Arena.ofShared()) {
            MemorySegment again = next.allocate(bytes, 16); // may well get the same addresses
            fill(again, SEED + 1);
            assertThat(pool.adopted(again, bytes)).as("a new arena's buffer: first use").isNull();
            assertThat(pool.stats().adoptedBuffers()).isZero();
            assertThat(dir.list()).isEmpty();
            MemorySegment view = pool.adopted(again, bytes);
            assertThat(view).isNotNull();
            pool.syncAdopted(again, view, bytes, true);
            assertSameBytes(view, again, "the new buffer's view");
        }
    }

    @Test
    void theCallersMemoryOutlivesThePoolAndOverlapsReplaceOlderAdoptions() {
        long bytes = 6L << 20;
        try (Arena user = Arena.ofConfined()) {
            MemorySegment seg = user.allocate(bytes, 8);
            fill(seg, SEED);
            MemorySegment a = seg.asSlice(0, 3L << 20);
            MemorySegment b = seg.asSlice(2L << 20, 3L << 20); // overlaps a by 1 MiB
            pool.adopted(a, a.byteSize());
            assertThat(pool.adopted(a, a.byteSize())).isNotNull();
            pool.adopted(b, b.byteSize());
            MemorySegment vb = pool.adopted(b, b.byteSize());
            assertThat(vb).isNotNull();
            assertThat(pool.stats().adoptedBuffers()).as("b replaced a").isEqualTo(1);
            pool.syncAdopted(b, vb, b.byteSize(), true);
            assertSameBytes(vb, b, "b's view");
            MemorySegment want = Arena.ofAuto().allocate(bytes);
            MemorySegment.copy(seg, 0, want, 0, bytes);
            pool.close();
            assertThat(dir.list()).isEmpty();
            assertSameBytes(seg, want, "the caller's bytes after the pool closed");
            fill(seg, SEED + 9); // still the caller's, writable
            fill(want, SEED + 9);
            assertSameBytes(seg, want, "the caller's bytes written after the pool closed");
        }
    }

    @Test
    void pastTheLimitNewBuffersAreCopiedAndNoAdoptionIsDropped() {
        long bytes = Adoptions.MIN_BYTES;
        try (Arena user = Arena.ofConfined()) {
            MemorySegment[] segs = new MemorySegment[Adoptions.MAX + 2];
            MemorySegment[] views = new MemorySegment[segs.length];
            for (int i = 0; i < segs.length; i++) {
                segs[i] = user.allocate(bytes, 8);
                fill(segs[i], SEED + i);
                pool.adopted(segs[i], bytes);
                views[i] = pool.adopted(segs[i], bytes);
                if (i < Adoptions.MAX) assertThat(views[i]).as("buffer %d", i).isNotNull();
                else assertThat(views[i]).as("buffer %d, past the limit", i).isNull();
            }
            for (int round = 0; round < 2; round++) {
                for (int i = 0; i < segs.length; i++) {
                    MemorySegment v = pool.adopted(segs[i], bytes);
                    if (i < Adoptions.MAX) assertThat(v).as("round %d: buffer %d keeps its view", round, i).isSameAs(views[i]);
                    else assertThat(v).as("round %d: buffer %d still copied", round, i).isNull();
                }
            }
            assertThat(pool.stats().adoptedBuffers()).isEqualTo(Adoptions.MAX);
            assertThat(dir.list()).hasSize(Adoptions.MAX);
            for (int i = 0; i < segs.length; i++) {
                MemorySegment want = Arena.ofAuto().allocate(bytes);
                fill(want, SEED + i);
                assertSameBytes(segs[i], want, "buffer " + i);
            }
        }
    }
}
