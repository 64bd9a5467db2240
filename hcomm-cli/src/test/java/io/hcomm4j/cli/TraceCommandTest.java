package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hcomm4j.CollectiveMismatchException;
import io.hcomm4j.DataType;
import io.hcomm4j.ReduceOp;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code hcomm trace DIR} on the flight records of a real job (three ranks, threads over sockets): records that agree
 * exit 0; after rank 2 called broadcast where the others called allReduce, it names collective #3 and rank 2 and exits
 * 1; {@code --last} lists each rank's ops; a folder without records and a bad {@code --last} are refused.
 */
class TraceCommandTest {
    @TempDir
    Path tmp;

    @Test
    void namesTheFirstDivergenceOfARealJob() throws Exception {
        Path agree = tmp.resolve("agree");
        Path diverged = tmp.resolve("diverged");
        ThreadRanks.run(3, r -> comm -> {
            try (Arena arena = Arena.ofShared()) {
                MemorySegment buf = arena.allocate(512 * 8);
                comm.allReduce(buf, buf, 512, DataType.INT64, ReduceOp.SUM);
                comm.allReduce(buf, buf, 512, DataType.INT64, ReduceOp.MAX);
                comm.dumpTrace(agree.resolve("hcomm-trace-rank" + r + ".json"));
                if (r == 2) {
                    assertThatThrownBy(() -> comm.broadcast(buf, 512, DataType.INT64, 0)).isInstanceOf(CollectiveMismatchException.class);
                } else {
                    assertThatThrownBy(() -> comm.allReduce(buf, buf, 512, DataType.INT64, ReduceOp.SUM))
                            .isInstanceOf(CollectiveMismatchException.class);
                }
                comm.dumpTrace(diverged.resolve("hcomm-trace-rank" + r + ".json"));
            }
            return null;
        });
        Captured ok = new Captured();
        assertThat(HcommCli.execute(new String[] {"trace", agree.toString()}, ok.out, ok.err, Map.of())).as(ok.toString()).isZero();
        assertThat(ok.out()).contains("3 of 3 ranks' flight records in " + agree).contains("rank 1 (pid " + ProcessHandle.current().pid())
                .contains(": dumpTrace; 1 communicator(s), 2 ops kept")
                .contains("the 3 ranks' records agree");

        Captured bad = new Captured();
        assertThat(HcommCli.execute(new String[] {"trace", "--last", "3", diverged.toString()}, bad.out, bad.err, Map.of()))
                .as(bad.toString()).isEqualTo(1);
        assertThat(bad.out()).contains("communicator 0 (3 ranks): collective #3 differs between ranks:")
                .contains("ranks 0, 1 called allReduce (count 512 INT64 SUM, 4.0 KiB)")
                .contains("rank 2 called broadcast (count 512 INT64, root 0, 4.0 KiB)")
                .contains("first divergence: communicator 0, collective #3 (mismatch, ranks [2])")
                .containsPattern("(?m)^rank 2, communicator 0 \\(rank 2 of 3\\):$")
                .containsPattern("(?m)^  collective #3 +broadcast .* failed .*CollectiveMismatchException");
    }

    @Test
    void aFolderWithoutRecordsAndBadArgumentsAreRefused() throws Exception {
        Captured none = new Captured();
        assertThat(HcommCli.execute(new String[] {"trace", tmp.toString()}, none.out, none.err, Map.of())).isEqualTo(2);
        assertThat(none.err()).contains("no flight records (hcomm-trace-rank<R>.json) in " + tmp);
        Files.writeString(tmp.resolve("hcomm-trace-rank0.json"), "{\"schema\": \"something else\"}");
        Captured alien = new Captured();
        assertThat(HcommCli.execute(new String[] {"trace", tmp.toString()}, alien.out, alien.err, Map.of())).isEqualTo(2);
        assertThat(alien.err()).contains("skipped " + tmp.resolve("hcomm-trace-rank0.json") + ": not a trace dump of schema hcomm-trace/1");
        Captured last = new Captured();
        assertThat(HcommCli.execute(new String[] {"trace", "--last", "-1", tmp.toString()}, last.out, last.err, Map.of())).isEqualTo(2);
        assertThat(last.err()).contains("--last must be >= 0, was -1");
        Captured file = new Captured();
        assertThat(HcommCli.execute(new String[] {"trace", tmp.resolve("hcomm-trace-rank0.json").toString()}, file.out, file.err, Map.of()))
                .isEqualTo(2);
        assertThat(file.err()).contains("is not a folder");
    }
}
