package io.hcomm4j.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.hcomm4j.examples.RankJobs.Outcome;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An example under Open MPI's {@code mpirun}, as docs/deploy.md describes it: the library takes the rank and size
 * from OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE (no RANK or WORLD_SIZE is set), and MASTER_ADDR / MASTER_PORT,
 * passed with {@code -x}, say where rank 0 serves the store. Skipped where {@code mpirun} is not on the PATH (CI does
 * not install Open MPI).
 */
@Timeout(200)
class MpirunTest {

    @Test
    void inferenceRunsUnderMpirunWithTwoRanks() throws Exception {
        String mpirun = onPath("mpirun");
        assumeTrue(mpirun != null, "mpirun is not on the PATH: install Open MPI (e.g. apt-get install openmpi-bin) to run this test");

        int port = RankJobs.freePort();
        List<String> cmd = new ArrayList<>(List.of(mpirun,
                "--allow-run-as-root", "--oversubscribe", "-np", "2",
                "-x", "MASTER_ADDR=127.0.0.1", "-x", "MASTER_PORT=" + port,
                "-x", "HCOMM_SECRET=examples-mpirun-secret", "-x", "HCOMM_TIMEOUT"));
        cmd.addAll(RankJobs.javaCommand(InferenceFanOut.class));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        // No RANK, WORLD_SIZE or HCOMM_*: the ranks must find their place from Open MPI's own variables.
        Map<String, String> env = RankJobs.cleanEnvironment(pb);
        // Open MPI refuses to start as root unless told twice (the flag above, or these variables).
        env.put("OMPI_ALLOW_RUN_AS_ROOT", "1");
        env.put("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");

        Outcome job = RankJobs.run(List.of(pb)).getFirst();

        assertThat(job.exitCode()).as(job.output()).isZero();
        // mpirun forwards both ranks' stdout; the order of their lines is not fixed
        List<String> results = job.lines().stream().filter(l -> ExamplesTest.RESULT.matcher(l).matches()).toList();
        assertThat(results).as(job.output()).hasSize(2);
        assertThat(results).anySatisfy(l -> assertThat(l).startsWith("inference rank 0/2 (front end): 12 batches,")
                .endsWith("every result equals the local computation: OK"));
        assertThat(results).anySatisfy(l -> assertThat(l).startsWith("inference rank 1/2 (worker): served ").endsWith(": OK"));
    }

    private static String onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) return null;
        for (String dir : path.split(File.pathSeparator)) {
            File f = new File(dir.isEmpty() ? "." : dir, name);
            if (f.isFile() && f.canExecute()) return f.getPath();
        }
        return null;
    }
}
