package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code hcomm launch} gives its ranks HCOMM_TRACE_DIR, a folder {@code trace-<launcher pid>} beside its job files, says
 * at the end that the ranks wrote flight records there, and {@code hcomm trace} without a folder reads the newest one;
 * a shell that sets HCOMM_TRACE_DIR keeps its own (the launcher sets none).
 */
@Timeout(120)
class LaunchTraceTest {
    @TempDir
    Path runtime;

    @Test
    void theRanksTraceFolderIsBesideTheJobFilesAndTraceFindsIt() throws Exception {
        Map<String, String> env = Map.of("XDG_RUNTIME_DIR", runtime.toString());
        List<String> args = new ArrayList<>(List.of("launch", "-n", "2", "--"));
        args.addAll(LocalLauncher.javaCommand(TraceDirRank.class.getName(), List.of()));
        Captured launch = new Captured();
        assertThat(HcommCli.execute(args.toArray(String[]::new), launch.out, launch.err, env)).as(launch.toString()).isZero();
        Path folder = runtime.resolve("hcomm").resolve("trace-" + ProcessHandle.current().pid());
        assertThat(launch.out()).contains("[rank 0] DUMPED " + folder, "[rank 1] DUMPED " + folder);
        assertThat(launch.err()).contains("hcomm launch: the ranks wrote flight records to " + folder + "; read them with hcomm trace " + folder);
        assertThat(folder.resolve("hcomm-trace-rank0.json")).exists();
        assertThat(folder.resolve("hcomm-trace-rank1.json")).exists();

        Captured trace = new Captured();
        assertThat(HcommCli.execute(new String[] {"trace"}, trace.out, trace.err, env)).as(trace.toString()).isZero();
        assertThat(trace.out()).contains("2 of 2 ranks' flight records in " + folder, "the 2 ranks' records agree");

        // a shell that sets HCOMM_TRACE_DIR: the launcher leaves it to the ranks' inherited environment (this test's
        // launcher runs in the test JVM, whose real environment has none, so the ranks see none)
        Path own = runtime.resolve("own");
        Captured mine = new Captured();
        assertThat(HcommCli.execute(args.toArray(String[]::new), mine.out, mine.err,
                Map.of("XDG_RUNTIME_DIR", runtime.toString(), "HCOMM_TRACE_DIR", own.toString()))).as(mine.toString()).isZero();
        assertThat(mine.out()).contains("[rank 0] NO HCOMM_TRACE_DIR", "[rank 1] NO HCOMM_TRACE_DIR");
        assertThat(mine.err()).doesNotContain("wrote flight records");
    }
}
