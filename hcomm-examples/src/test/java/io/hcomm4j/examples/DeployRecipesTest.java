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
 * script with a stand-in for {@code srun} (the ranks find the store from the node list and the job id themselves). The
 * job is {@link DataParallelTraining} on 2 ranks with its defaults, and its result lines are checked as
 * {@link DataParallelExamplesTest} checks its 4-rank training (this is the suite's 2-rank run of that example). Spark
 * runs for real in hcomm-spark's tests.
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
        // the script's java command line is the docs'; its rank JVMs get RankJobs' flags through the environment (C1
        // only, no wait at exit; each JVM says "NOTE: Picked up JDK_JAVA_OPTIONS" on stderr)
        env.put("JDK_JAVA_OPTIONS", ("-XX:UserThreadWaitAttemptsAtExit=0 " + RankJobs.RANK_JIT).trim());

        Outcome job = RankJobs.run(List.of(pb)).getFirst();

        assertThat(job.exitCode()).as(job.output()).isZero();
        // srun's tasks share its output: one result line per rank, in any order
        List<ExamplesTest.Result> results = ExamplesTest.resultLines(job).stream()
                .sorted(java.util.Comparator.comparingInt(ExamplesTest.Result::rank)).toList();
        assertThat(results).as(job.output()).extracting(r -> r.example() + " " + r.rank() + "/" + r.size() + " " + r.ok())
                .containsExactly("training 0/2 true", "training 1/2 true");
        // the 2-rank data-parallel training with its defaults: checked as DataParallelExamplesTest checks its 4-rank job
        DataParallelExamplesTest.checkTraining(results, 2);
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
