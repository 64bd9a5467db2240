package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** Which environments count as "inside a job". */
class JobEnvTest {
    @Test
    void torchrunAndHcommLaunch() {
        assertThat(JobEnv.detect(Map.of("RANK", "1", "WORLD_SIZE", "4"))).contains(new JobEnv(1, 4));
    }

    @Test
    void openMpiAndSlurm() {
        assertThat(JobEnv.detect(Map.of("OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "3"))).contains(new JobEnv(2, 3));
        assertThat(JobEnv.detect(Map.of("SLURM_PROCID", "0", "SLURM_NTASKS", "2"))).contains(new JobEnv(0, 2));
    }

    @Test
    void aSingleSlurmTaskIsNotAJob() {
        assertThat(JobEnv.detect(Map.of("SLURM_PROCID", "0", "SLURM_NTASKS", "1"))).isEmpty();
    }

    @Test
    void nothingOrNonsenseIsNotAJob() {
        assertThat(JobEnv.detect(Map.of())).isEmpty();
        assertThat(JobEnv.detect(Map.of("RANK", "0"))).isEmpty();
        assertThat(JobEnv.detect(Map.of("RANK", "x", "WORLD_SIZE", "2"))).isEmpty();
        assertThat(JobEnv.detect(Map.of("RANK", "2", "WORLD_SIZE", "2"))).isEmpty();
    }
}
