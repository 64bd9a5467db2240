package io.hcomm4j.memory;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.util.List;
import org.junit.jupiter.api.Test;

class ShmFilesTest {
    private static final ShmFiles.Owner SELF = ShmFiles.SELF;

    private static String name(long ns, long pid, long start, long seq) {
        return "hcomm4j-" + ns + "-" + pid + "-" + start + "-" + seq;
    }

    @Test
    void namesCarryTheOwnerAndParseBack() {
        assertThat(SELF.pid()).isEqualTo(ProcessHandle.current().pid());
        assertThat(SELF.startTime()).isPositive();
        assertThat(SELF.namespace()).isPositive();
        assertThat(SELF.alive()).isTrue();
        String a = ShmFiles.newName();
        String b = ShmFiles.newName();
        assertThat(a).isNotEqualTo(b).startsWith("hcomm4j-" + SELF.namespace() + "-" + SELF.pid() + "-" + SELF.startTime() + "-");
        assertThat(ShmFiles.parse(a)).isEqualTo(SELF);
        assertThat(ShmFiles.parse("hcomm4j-1-2-3-4")).isEqualTo(new ShmFiles.Owner(1, 2, 3));
        assertThat(ShmFiles.parse("hcomm4j-1-2-3")).isNull();
        assertThat(ShmFiles.parse("hcomm4j-1-x-3-4")).isNull();
        assertThat(ShmFiles.parse("hcomm4j-1-0-3-4")).isNull();
        assertThat(ShmFiles.parse("other-1-2-3-4")).isNull();
    }

    @Test
    void startTimeIsField22OfProcStat() throws Exception {
        ProcessHandle parent = ProcessHandle.current().parent().orElseThrow();
        long start = ShmFiles.startTime(parent.pid());
        assertThat(start).isPositive().isLessThanOrEqualTo(SELF.startTime());
        // the same number `ps` shows through /proc (in clock ticks): read it another way
        String stat = Files.readString(java.nio.file.Path.of("/proc/self/stat"));
        String[] afterComm = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        assertThat(Long.parseLong(afterComm[19])).isEqualTo(SELF.startTime());
        assertThat(ShmFiles.startTime(Integer.MAX_VALUE)).isEqualTo(-1); // above any pid_max: no such process
    }

    @Test
    void openingAPoolRemovesFilesOfDeadOwnersAndKeepsTheRest() throws Exception {
        try (ShmDir dir = new ShmDir()) {
            long ns = SELF.namespace();
            ProcessHandle parent = ProcessHandle.current().parent().orElseThrow();
            String deadPid = name(ns, Integer.MAX_VALUE, 12345, 1);                   // no such process
            String reusedPid = name(ns, SELF.pid(), SELF.startTime() + 1, 2);          // our pid, but another process's start time
            String liveSelf = name(ns, SELF.pid(), SELF.startTime(), 999_999_999);     // this process
            String liveParent = name(ns, parent.pid(), ShmFiles.startTime(parent.pid()), 3);
            String otherNamespace = name(ns + 1, Integer.MAX_VALUE, 12345, 4);        // cannot judge: kept
            String notOurs = "hcomm4j-not-a-pool-file";
            String unrelated = "something-else";
            for (String n : List.of(deadPid, reusedPid, liveSelf, liveParent, otherNamespace, notOurs, unrelated)) {
                Files.writeString(dir.path.resolve(n), "x");
            }
            Files.createDirectory(dir.path.resolve(name(ns, Integer.MAX_VALUE, 1, 5))); // not a regular file: kept
            assertThat(dir.list()).hasSize(8);

            MemoryPool pool = MemoryPool.open(dir.options(1 << 20, false));
            assertThat(dir.list()).containsExactlyInAnyOrder(liveSelf, liveParent, otherNamespace, notOurs, unrelated,
                    name(ns, Integer.MAX_VALUE, 1, 5));
            pool.close();
            assertThat(dir.list()).hasSize(6); // closing a pool removes only its own files
            Files.delete(dir.path.resolve(name(ns, Integer.MAX_VALUE, 1, 5)));
        }
    }

    @Test
    void aMissingDirectoryFailsOnlyTheAllocationNamingTheDirectory() {
        java.nio.file.Path missing = java.nio.file.Path.of("/dev/shm/hcomm-mempool-test-missing-" + System.nanoTime());
        try (MemoryPool pool = MemoryPool.open(new MemoryPool.Options(missing, 1 << 20, false))) {
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> pool.allocate(10))
                    .isInstanceOf(io.hcomm4j.HcommException.class)
                    .hasMessageStartingWith("memory pool: cannot create a shared-memory file of 1048576 bytes in " + missing
                            + " (HCOMM_SHM_DIR): java.nio.file.NoSuchFileException");
            assertThat(pool.stats().mappings()).isZero();
            assertThat(pool.stats().buffersInUse()).isZero();
        }
    }
}
