package io.hcomm4j.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.hcomm4j.examples.RankJobs.Outcome;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What docs/deploy.md shows for engines that do not run here, checked as far as this machine allows: the Slurm batch
 * script with a stand-in for {@code srun} (the ranks find the store from the node list and the job id themselves).
 * Spark runs for real in hcomm-spark's tests.
 */
@Timeout(200)
class DeployRecipesTest {
    private static final Path SBATCH = Path.of("..", "docs", "deploy", "slurm-training.sbatch");

    @Test
    void slurmBatchScriptRunsTheRanksFromSlurmProcid(@TempDir Path bin) throws Exception {
        assertThat(SBATCH).as("the batch script, relative to the module directory").isRegularFile();
        // srun: starts SLURM_NTASKS copies of its command with SLURM_PROCID 0.. and a SLURM_STEP_ID (what srun does on
        // each node) and fails if one does.
        script(bin.resolve("srun"), """
                #!/bin/bash
                while [ "${1:-}" != "${1#-}" ]; do shift; done
                pids=()
                for ((i = 0; i < SLURM_NTASKS; i++)); do SLURM_PROCID=$i SLURM_STEP_ID=0 "$@" & pids+=($!); done
                rc=0
                for p in "${pids[@]}"; do wait "$p" || rc=$?; done
                exit $rc
                """);
        ProcessBuilder pb = new ProcessBuilder("bash", SBATCH.toString());
        Map<String, String> env = RankJobs.cleanEnvironment(pb);
        env.put("PATH", bin + ":" + System.getenv("PATH"));
        env.put("SLURM_JOB_NODELIST", "localhost");
        env.put("SLURM_NTASKS", "2");
        // the store's port is 20000 + SLURM_JOB_ID % 20000: pick a job id whose port is free
        env.put("SLURM_JOB_ID", Integer.toString(freePortFrom20000() - 20000));
        env.put("JAVA_HOME", System.getProperty("java.home"));
        env.put("JAR", System.getProperty("java.class.path"));   // the script's -cp: this module's classes and jars

        Outcome job = RankJobs.run(List.of(pb)).getFirst();

        assertThat(job.exitCode()).as(job.output()).isZero();
        List<String> results = job.lines().stream().filter(l -> ExamplesTest.RESULT.matcher(l).matches()).toList();
        assertThat(results).as(job.output()).hasSize(2)
                .anySatisfy(l -> assertThat(l).startsWith("training rank 0/2: ").endsWith(": OK"))
                .anySatisfy(l -> assertThat(l).startsWith("training rank 1/2: ").endsWith(": OK"));
    }

    private static void script(Path file, String text) throws IOException {
        Files.writeString(file, text);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    /** A port in [20000, 40000) that is free on loopback now. */
    private static int freePortFrom20000() {
        for (int attempt = 0; attempt < 200; attempt++) {
            int port = ThreadLocalRandom.current().nextInt(20000, 40000);
            try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
                return s.getLocalPort();
            } catch (IOException taken) {
                // try another
            }
        }
        throw new IllegalStateException("no free port in [20000, 40000)");
    }
}
